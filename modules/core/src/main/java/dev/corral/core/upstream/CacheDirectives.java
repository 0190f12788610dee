package dev.corral.core.upstream;

import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Optional;

/**
 * What an upstream response's {@code Cache-Control}, {@code Expires} and {@code Date} say about
 * storing and reusing it, as a shared cache reads them (RFC 9111). Parsing never throws: a hostile
 * or broken value is read the safe way, as the RFC asks of a cache.
 *
 * <ul>
 *   <li>{@code no-store} or {@code private} (with or without field names): {@link #noStore()}.
 *   <li>{@code no-cache} (with or without field names): fresh for 0 and never served stale.
 *   <li>{@code immutable}: fresh forever (empty {@link #freshFor()}), unless {@code no-cache}.
 *   <li>{@code s-maxage} (it wins for a shared cache), else {@code max-age}, else {@code Expires}
 *       minus {@code Date} ({@code Date} missing: minus the time the response arrived): the
 *       freshness lifetime. The first occurrence of a directive counts. A value that is not a
 *       non-negative integer, and an {@code Expires} that is not an HTTP date (such as
 *       {@code 0}), mean already stale (lifetime 0); a value past 2^31 seconds is read as 2^31
 *       seconds (RFC 9111 1.2.2).
 *   <li>{@code must-revalidate}, {@code proxy-revalidate} (and {@code no-cache}): never served
 *       stale past the lifetime.
 *   <li>None of the above: {@link #says()} is false.
 * </ul>
 *
 * @param noStore the body must not be stored ({@code no-store} or {@code private})
 * @param immutable the response never changes while fresh, and it has no lifetime: fresh forever
 * @param lifetimeMillis the freshness lifetime, or -1 when the headers give none
 * @param mustRevalidate a stale copy must not be served without revalidating it
 */
public record CacheDirectives(boolean noStore, boolean immutable, long lifetimeMillis, boolean mustRevalidate) {

  /** The largest delta-seconds a cache need represent (RFC 9111 1.2.2). */
  static final long MAX_DELTA_SECONDS = 2_147_483_648L;

  /** A response without any freshness header. */
  public static final CacheDirectives NONE = new CacheDirectives(false, false, -1, false);

  /**
   * Reads the directives of {@code headers}.
   *
   * @param receivedAtMillis when the response arrived (stands in for a missing {@code Date})
   */
  public static CacheDirectives of(List<Header> headers, long receivedAtMillis) {
    // Read on every hit of a repository whose freshness the upstream's headers set: no string is
    // made here but a max-age's value and the two dates.
    Said said = new Said();
    String expires = null;
    String date = null;
    for (Header h : headers) {
      String name = h.name();
      if (expires == null && is(name, 0, name.length(), "expires")) {
        expires = h.value();
      } else if (date == null && is(name, 0, name.length(), "date")) {
        date = h.value();
      } else if (is(name, 0, name.length(), "cache-control")) {
        String v = h.value();
        for (int from = 0, comma; from <= v.length(); from = comma + 1) {
          comma = v.indexOf(',', from);
          if (comma < 0) {
            comma = v.length();
          }
          said.directive(v, from, comma);
        }
      }
    }
    if (said.noCache) {
      return new CacheDirectives(said.noStore, false, 0, true);
    }
    if (said.immutable) {
      return new CacheDirectives(said.noStore, true, -1, said.mustRevalidate);
    }
    long lifetime = said.sMaxAge >= 0 ? said.sMaxAge * 1000 : said.maxAge >= 0 ? said.maxAge * 1000 : -1;
    if (lifetime < 0 && expires != null) {
      lifetime = expiresLifetime(expires, date, receivedAtMillis);
    }
    return new CacheDirectives(said.noStore, false, lifetime, said.mustRevalidate);
  }

  /** The Cache-Control directives read so far. */
  private static final class Said {
    boolean noStore;
    boolean noCache;
    boolean immutable;
    boolean mustRevalidate;
    long maxAge = -1;
    long sMaxAge = -1;

    /** One directive, {@code v} from {@code from} to {@code to}: a name, then maybe {@code =value}. */
    void directive(String v, int from, int to) {
      while (from < to && v.charAt(from) <= ' ') {
        from++;
      }
      while (to > from && v.charAt(to - 1) <= ' ') {
        to--;
      }
      int eq = v.indexOf('=', from);
      if (eq >= to) {
        eq = -1;
      }
      int keyEnd = eq < 0 ? to : eq;
      while (keyEnd > from && v.charAt(keyEnd - 1) <= ' ') {
        keyEnd--;
      }
      if (is(v, from, keyEnd, "no-store") || is(v, from, keyEnd, "private")) {
        noStore = true;
      } else if (is(v, from, keyEnd, "no-cache")) {
        noCache = true;
      } else if (is(v, from, keyEnd, "immutable")) {
        immutable = true;
      } else if (is(v, from, keyEnd, "must-revalidate") || is(v, from, keyEnd, "proxy-revalidate")) {
        mustRevalidate = true;
      } else if (is(v, from, keyEnd, "max-age")) {
        maxAge = maxAge >= 0 ? maxAge : seconds(eq < 0 ? null : v.substring(eq + 1, to).trim());
      } else if (is(v, from, keyEnd, "s-maxage")) {
        sMaxAge = sMaxAge >= 0 ? sMaxAge : seconds(eq < 0 ? null : v.substring(eq + 1, to).trim());
      }
      // other directives (public, stale-while-revalidate, ...) change nothing here
    }
  }

  /**
   * Whether {@code s} from {@code from} to {@code to} is {@code lower} (lower-case ASCII) in any
   * ASCII case: what {@code toLowerCase(Locale.ROOT).equals(lower)} said, without the copy.
   */
  private static boolean is(String s, int from, int to, String lower) {
    if (to - from != lower.length()) {
      return false;
    }
    for (int i = 0; i < lower.length(); i++) {
      char c = s.charAt(from + i);
      if (c >= 'A' && c <= 'Z') {
        c = (char) (c + ('a' - 'A'));
      }
      if (c != lower.charAt(i)) {
        return false;
      }
    }
    return true;
  }

  /** Whether the headers say anything about storing or freshness. */
  public boolean says() {
    return noStore || immutable || lifetimeMillis >= 0 || mustRevalidate;
  }

  /** The freshness lifetime; empty when the headers give none (or say {@code immutable}). */
  public Optional<Duration> freshFor() {
    return lifetimeMillis < 0 ? Optional.empty() : Optional.of(Duration.ofMillis(lifetimeMillis));
  }

  /** A delta-seconds value; 0 (stale) when it is missing or not a non-negative integer. */
  private static long seconds(String value) {
    if (value == null) {
      return 0;
    }
    String v = value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")
        ? value.substring(1, value.length() - 1) : value;
    if (v.isEmpty() || v.length() > 40) {
      return 0;
    }
    long n = 0;
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c < '0' || c > '9') {
        return 0;
      }
      n = n * 10 + (c - '0');
      if (n >= MAX_DELTA_SECONDS) {
        return MAX_DELTA_SECONDS;
      }
    }
    return n;
  }

  /** Expires minus Date, at least 0; an invalid Expires is in the past, an invalid Date is ignored. */
  private static long expiresLifetime(String expires, String date, long receivedAtMillis) {
    Optional<Long> at = httpDate(expires);
    if (at.isEmpty()) {
      return 0;
    }
    long from = date == null ? receivedAtMillis : httpDate(date).orElse(receivedAtMillis);
    long lifetime = at.get() - from;
    return Math.max(0, Math.min(lifetime, MAX_DELTA_SECONDS * 1000));
  }

  private static Optional<Long> httpDate(String value) {
    if (value == null || value.length() > 64) {
      return Optional.empty();
    }
    try {
      return Optional.of(ZonedDateTime.parse(value.trim(), DateTimeFormatter.RFC_1123_DATE_TIME).toInstant().toEpochMilli());
    } catch (DateTimeParseException e) {
      return Optional.empty();
    }
  }
}
