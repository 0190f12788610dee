package dev.corral.registry.generic;

import dev.corral.core.upstream.Lifetime;
import java.util.List;
import java.util.regex.Pattern;

/**
 * A generic repository's freshness rules (setting {@code freshness}): path patterns, each with a
 * {@link Lifetime} ({@code immutable}, or {@code ttl}), tried in order; the first that matches a
 * request's path decides, whatever the upstream's headers say. A path no rule matches follows the
 * upstream's {@code Cache-Control} / {@code Expires} ({@link Lifetime#UPSTREAM}).
 *
 * <p>Patterns are globs over the decoded path after the repository name, without a leading
 * {@code /}: {@code *} is any run of characters within one segment, {@code **} any run across
 * segments (including none), {@code ?} one character other than {@code /}; everything else stands
 * for itself. {@code dists/**} matches {@code dists/stable/Release}, {@code *.deb} only a file at
 * the top.
 */
public final class FreshnessRules {

  /** One rule: the pattern as written and what it decides. */
  public record Rule(String pattern, Lifetime lifetime) {
    public Rule {
      if (lifetime.kind() != Lifetime.Kind.IMMUTABLE && lifetime.kind() != Lifetime.Kind.FIXED) {
        throw new IllegalArgumentException("a freshness rule is immutable or has a ttl");
      }
      glob(pattern); // checked here: a bad pattern is a setting error, not a request's
    }
  }

  /** No rule: every path follows the upstream's headers. */
  public static final FreshnessRules NONE = new FreshnessRules(List.of());

  private final List<Rule> rules;
  private final List<Pattern> compiled;

  public FreshnessRules(List<Rule> rules) {
    this.rules = List.copyOf(rules);
    this.compiled = this.rules.stream().map(r -> glob(r.pattern())).toList();
  }

  public List<Rule> rules() {
    return rules;
  }

  /** The lifetime of a path (decoded, after the repository name, no leading {@code /}). */
  public Lifetime lifetimeOf(String path) {
    for (int i = 0; i < compiled.size(); i++) {
      if (compiled.get(i).matcher(path).matches()) {
        return rules.get(i).lifetime();
      }
    }
    return Lifetime.UPSTREAM;
  }

  /**
   * The pattern as a regular expression.
   *
   * @throws IllegalArgumentException naming what is wrong with it
   */
  static Pattern glob(String pattern) {
    if (pattern == null || pattern.isBlank()) {
      throw new IllegalArgumentException("a path pattern must not be empty");
    }
    if (pattern.startsWith("/")) {
      throw new IllegalArgumentException("path pattern " + quoted(pattern)
          + " starts with /: patterns match the path after the repository name, without a leading /");
    }
    if (pattern.length() > 1024) {
      throw new IllegalArgumentException("a path pattern is at most 1024 characters");
    }
    StringBuilder regex = new StringBuilder();
    int i = 0;
    while (i < pattern.length()) {
      char c = pattern.charAt(i);
      if (c == '*' && i + 1 < pattern.length() && pattern.charAt(i + 1) == '*') {
        if (i + 2 < pattern.length() && pattern.charAt(i + 2) == '*') {
          throw new IllegalArgumentException("path pattern " + quoted(pattern) + " has ***: use * or **");
        }
        regex.append(".*");
        i += 2;
        continue;
      }
      switch (c) {
        case '*' -> regex.append("[^/]*");
        case '?' -> regex.append("[^/]");
        case '[', ']', '{', '}', '\\' -> throw new IllegalArgumentException("path pattern " + quoted(pattern)
            + " uses " + c + ", which patterns do not support (only *, ** and ?)");
        default -> {
          if (Character.isISOControl(c)) {
            throw new IllegalArgumentException("path pattern " + quoted(pattern) + " has a control character");
          }
          regex.append(Pattern.quote(String.valueOf(c)));
        }
      }
      i++;
    }
    return Pattern.compile(regex.toString());
  }

  private static String quoted(String s) {
    return "\"" + s + "\"";
  }

  /** As written in the configuration, for logs and the settings dump. */
  @Override
  public String toString() {
    StringBuilder out = new StringBuilder("[");
    for (Rule r : rules) {
      if (out.length() > 1) {
        out.append(", ");
      }
      out.append("{ path = ").append(quoted(r.pattern())).append(", ");
      out.append(r.lifetime().kind() == Lifetime.Kind.IMMUTABLE ? "immutable = true"
          : "ttl = " + r.lifetime().ttlMillis() + "ms");
      out.append(" }");
    }
    return out.append("]").toString();
  }
}
