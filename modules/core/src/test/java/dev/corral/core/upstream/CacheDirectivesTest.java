package dev.corral.core.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CacheDirectivesTest {
  private static final long NOW = 1_800_000_000_000L;

  private static CacheDirectives of(String... nameValues) {
    List<Header> headers = new java.util.ArrayList<>();
    for (int i = 0; i < nameValues.length; i += 2) {
      headers.add(new Header(nameValues[i], nameValues[i + 1]));
    }
    return CacheDirectives.of(headers, NOW);
  }

  @Test
  void noFreshnessHeadersSayNothing() {
    CacheDirectives d = of("Content-Type", "text/plain", "ETag", "\"x\"");
    assertEquals(CacheDirectives.NONE, d);
    assertFalse(d.says());
    assertEquals(Optional.empty(), d.freshFor());
  }

  @Test
  void maxAgeIsTheLifetime() {
    CacheDirectives d = of("Cache-Control", "public, max-age=300");
    assertEquals(Optional.of(Duration.ofSeconds(300)), d.freshFor());
    assertFalse(d.noStore());
    assertFalse(d.mustRevalidate());
    assertTrue(d.says());
  }

  @Test
  void directivesAreCaseInsensitiveAndMayBeQuotedOrSpreadOverLines() {
    assertEquals(120_000, of("cache-control", "MAX-AGE=\"120\"").lifetimeMillis());
    CacheDirectives spread = of("Cache-Control", "public", "Cache-Control", "max-age=60, Must-Revalidate");
    assertEquals(60_000, spread.lifetimeMillis());
    assertTrue(spread.mustRevalidate());
  }

  @Test
  void spacesEmptyDirectivesAndLookAlikeLettersAreReadAsBefore() {
    assertEquals(45_000, of("CACHE-CONTROL", " ,, public ,\tmax-age = 45 ,").lifetimeMillis());
    assertTrue(of("Cache-Control", "no-cache=\"Set-Cookie, X-Y\"").mustRevalidate());
    assertEquals(0, of("Cache-Control", "max-age").lifetimeMillis()); // no value: stale
    // Only ASCII letters fold: a dotless i (U+0131) or a Kelvin sign is not the directive's letter.
    assertFalse(of("Cache-Control", "pr\u0131vate").noStore());
    assertEquals(CacheDirectives.NONE, of("Cache-Control", "max-\u0131ge=5"));
    assertEquals(CacheDirectives.NONE, of("Exp\u0131res", "Thu, 01 Jan 2099 00:00:00 GMT"));
    assertEquals(30_000, of("Date", "Thu, 01 Jan 2099 00:00:00 GMT", "EXPIRES", "Thu, 01 Jan 2099 00:00:30 GMT")
        .lifetimeMillis());
  }

  @Test
  void sMaxAgeWinsForASharedCache() {
    assertEquals(600_000, of("Cache-Control", "max-age=60, s-maxage=600").lifetimeMillis());
    assertEquals(0, of("Cache-Control", "s-maxage=0, max-age=600").lifetimeMillis());
  }

  @Test
  void theFirstOccurrenceCounts() {
    assertEquals(10_000, of("Cache-Control", "max-age=10, max-age=99").lifetimeMillis());
  }

  @Test
  void noStoreAndPrivateAreNotStored() {
    assertTrue(of("Cache-Control", "no-store").noStore());
    assertTrue(of("Cache-Control", "private, max-age=60").noStore());
    assertTrue(of("Cache-Control", "private=\"Set-Cookie\"").noStore());
    assertFalse(of("Cache-Control", "public, max-age=60").noStore());
  }

  @Test
  void noCacheIsStoredButRevalidatedOnEveryRequestAndNeverServedStale() {
    CacheDirectives d = of("Cache-Control", "no-cache, max-age=600, immutable");
    assertFalse(d.noStore());
    assertFalse(d.immutable());
    assertEquals(0, d.lifetimeMillis());
    assertTrue(d.mustRevalidate());
  }

  @Test
  void maxAgeZeroIsStaleAtOnceButMayBeServedStale() {
    CacheDirectives d = of("Cache-Control", "max-age=0");
    assertEquals(0, d.lifetimeMillis());
    assertFalse(d.mustRevalidate());
  }

  @Test
  void immutableIsFreshForever() {
    CacheDirectives d = of("Cache-Control", "public, max-age=31536000, immutable");
    assertTrue(d.immutable());
    assertEquals(Optional.empty(), d.freshFor());
    assertTrue(d.says());
  }

  @Test
  void mustRevalidateAndProxyRevalidate() {
    assertTrue(of("Cache-Control", "max-age=5, must-revalidate").mustRevalidate());
    assertTrue(of("Cache-Control", "max-age=5, proxy-revalidate").mustRevalidate());
  }

  @Test
  void expiresMinusDate() {
    CacheDirectives d = of("Date", "Tue, 01 Dec 2026 10:00:00 GMT", "Expires", "Tue, 01 Dec 2026 10:05:00 GMT");
    assertEquals(300_000, d.lifetimeMillis());
    // max-age wins over Expires
    assertEquals(7_000, of("Cache-Control", "max-age=7", "Date", "Tue, 01 Dec 2026 10:00:00 GMT",
        "Expires", "Tue, 01 Dec 2026 10:05:00 GMT").lifetimeMillis());
  }

  @Test
  void expiresWithoutDateCountsFromArrival() {
    String inAMinute = java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME
        .format(java.time.Instant.ofEpochMilli(NOW + 60_000).atZone(java.time.ZoneOffset.UTC));
    assertEquals(60_000, of("Expires", inAMinute).lifetimeMillis());
  }

  @Test
  void anExpiresInThePastIsStale() {
    assertEquals(0, of("Date", "Tue, 01 Dec 2026 10:05:00 GMT", "Expires", "Tue, 01 Dec 2026 10:00:00 GMT")
        .lifetimeMillis());
  }

  @Test
  void invalidValuesAreReadTheSafeWay() {
    // RFC 9111: invalid freshness information is stale; an invalid Expires (such as 0) is in the past
    assertEquals(0, of("Cache-Control", "max-age=abc").lifetimeMillis());
    assertEquals(0, of("Cache-Control", "max-age=-5").lifetimeMillis());
    assertEquals(0, of("Cache-Control", "max-age").lifetimeMillis());
    assertEquals(0, of("Cache-Control", "max-age=1.5").lifetimeMillis());
    assertEquals(0, of("Expires", "0").lifetimeMillis());
    assertEquals(0, of("Expires", "yesterday").lifetimeMillis());
    assertEquals(0, of("Expires", "x".repeat(10_000)).lifetimeMillis());
    // an invalid Date is ignored: the lifetime counts from the arrival
    String inAMinute = java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME
        .format(java.time.Instant.ofEpochMilli(NOW + 60_000).atZone(java.time.ZoneOffset.UTC));
    assertEquals(60_000, of("Date", "not a date", "Expires", inAMinute).lifetimeMillis());
    // unknown and malformed directives change nothing
    assertEquals(CacheDirectives.NONE, of("Cache-Control", ",,, =, stale-while-revalidate=30, foo=\"bar, baz\""));
  }

  @Test
  void absurdlyLargeValuesAreCappedAtTwoToTheThirtyOneSeconds() {
    long cap = 2_147_483_648L * 1000;
    assertEquals(cap, of("Cache-Control", "max-age=99999999999999999999999999999").lifetimeMillis());
    assertEquals(cap, of("Cache-Control", "s-maxage=2147483649").lifetimeMillis());
    assertEquals(0, of("Cache-Control", "max-age=" + "9".repeat(100)).lifetimeMillis(),
        "a value longer than any number is not one: stale");
    assertEquals(cap, of("Date", "Tue, 01 Dec 2026 10:00:00 GMT", "Expires", "Fri, 31 Dec 9999 23:59:59 GMT")
        .lifetimeMillis());
  }
}
