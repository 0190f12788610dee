package dev.corral.registry.generic;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * What a generic repository does with a request's query string (setting {@code query}): the
 * query it keeps is part of the upstream URL and so of the key (SEMANTICS K1), so a query that is
 * dropped can neither make another upstream request nor another key record (cache busting with
 * {@code ?x=1}, {@code ?x=2}, ...).
 */
public sealed interface QueryPolicy {

  /** The query Corral sends upstream (and keys by), from the client's raw query. */
  Optional<String> apply(Optional<String> rawQuery);

  /** As written in the configuration: {@code keep}, {@code drop} or the kept names. */
  String describe();

  /** The whole query, as the client sent it (the default, and today's behaviour). */
  record Keep() implements QueryPolicy {
    @Override
    public Optional<String> apply(Optional<String> rawQuery) {
      return rawQuery.filter(q -> !q.isEmpty());
    }

    @Override
    public String describe() {
      return "keep";
    }
  }

  /** No query at all: every query of a path is the one key. */
  record Drop() implements QueryPolicy {
    @Override
    public Optional<String> apply(Optional<String> rawQuery) {
      return Optional.empty();
    }

    @Override
    public String describe() {
      return "drop";
    }
  }

  /**
   * Only the named parameters (compared after percent-decoding, case-sensitively), as the client
   * wrote them, ordered by name (a parameter given twice keeps both, in the client's order), so
   * that reordering a query does not make another key either.
   */
  record Only(Set<String> names) implements QueryPolicy {
    public Only {
      names = Set.copyOf(names);
      if (names.isEmpty()) {
        throw new IllegalArgumentException("a list of query parameters to keep needs at least one name");
      }
    }

    @Override
    public Optional<String> apply(Optional<String> rawQuery) {
      if (rawQuery.isEmpty() || rawQuery.get().isEmpty()) {
        return Optional.empty();
      }
      List<String[]> kept = new ArrayList<>();
      for (String pair : rawQuery.get().split("&", -1)) {
        int eq = pair.indexOf('=');
        String name = decoded(eq < 0 ? pair : pair.substring(0, eq));
        if (name != null && names.contains(name)) {
          kept.add(new String[] {name, pair});
        }
      }
      if (kept.isEmpty()) {
        return Optional.empty();
      }
      kept.sort(Comparator.comparing(p -> p[0])); // stable: equal names keep their order
      List<String> out = new ArrayList<>();
      kept.forEach(p -> out.add(p[1]));
      return Optional.of(String.join("&", out));
    }

    @Override
    public String describe() {
      return String.join(",", names.stream().sorted().toList());
    }

    private static String decoded(String raw) {
      try {
        return URLDecoder.decode(raw, StandardCharsets.UTF_8);
      } catch (IllegalArgumentException e) {
        return null; // a malformed escape names no parameter
      }
    }
  }

  /** The default. */
  static QueryPolicy keep() {
    return new Keep();
  }

  /**
   * {@code keep}, {@code drop}, or parameter names.
   *
   * @throws IllegalArgumentException with a one-line reason
   */
  static QueryPolicy parse(List<String> values) {
    if (values.size() == 1) {
      String v = values.get(0).trim().toLowerCase(Locale.ROOT);
      if (v.equals("keep")) {
        return new Keep();
      }
      if (v.equals("drop")) {
        return new Drop();
      }
    }
    List<String> names = new ArrayList<>();
    for (String v : values) {
      for (String n : v.split(",", -1)) {
        String name = n.trim();
        if (name.isEmpty() || !name.chars().allMatch(c -> c > 0x20 && c < 0x7f && c != '&' && c != '=' && c != '#')) {
          throw new IllegalArgumentException("\"" + n.trim() + "\" is not a query parameter name"
              + " (expected keep, drop, or a list of parameter names)");
        }
        names.add(name);
      }
    }
    if (names.isEmpty()) {
      throw new IllegalArgumentException("expected keep, drop, or a list of parameter names");
    }
    return new Only(Set.copyOf(names));
  }
}
