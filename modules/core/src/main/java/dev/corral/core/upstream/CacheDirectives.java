package dev.corral.core.upstream;

import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
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
    boolean noStore = false;
    boolean noCache = false;
    boolean immutable = false;
    boolean mustRevalidate = false;
    long maxAge = -1;
    long sMaxAge = -1;
    String expires = null;
    String date = null;
    for (Header h : headers) {
      String name = h.name().toLowerCase(Locale.ROOT);
      if (name.equals("expires") && expires == null) {
        expires = h.value();
      } else if (name.equals("date") && date == null) {
        date = h.value();
      } else if (name.equals("cache-control")) {
        for (String part : h.value().split(",")) {
          String directive = part.trim();
          int eq = directive.indexOf('=');
          String key = (eq < 0 ? directive : directive.substring(0, eq)).trim().toLowerCase(Locale.ROOT);
          String value = eq < 0 ? null : directive.substring(eq + 1).trim();
          switch (key) {
            case "no-store", "private" -> noStore = true;
            case "no-cache" -> noCache = true;
            case "immutable" -> immutable = true;
            case "must-revalidate", "proxy-revalidate" -> mustRevalidate = true;
            case "max-age" -> maxAge = maxAge >= 0 ? maxAge : seconds(value);
            case "s-maxage" -> sMaxAge = sMaxAge >= 0 ? sMaxAge : seconds(value);
            default -> { } // other directives (public, stale-while-revalidate, ...) change nothing here
          }
        }
      }
    }
    if (noCache) {
      return new CacheDirectives(noStore, false, 0, true);
    }
    if (immutable) {
      return new CacheDirectives(noStore, true, -1, mustRevalidate);
    }
    long lifetime = sMaxAge >= 0 ? sMaxAge * 1000 : maxAge >= 0 ? maxAge * 1000 : -1;
    if (lifetime < 0 && expires != null) {
      lifetime = expiresLifetime(expires, date, receivedAtMillis);
    }
    return new CacheDirectives(noStore, false, lifetime, mustRevalidate);
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
