package dev.corral.core.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class LifetimeTest {
  private static final Duration METADATA_TTL = Duration.ofMinutes(5);
  private static final List<Header> MAX_AGE_60 = List.of(new Header("Cache-Control", "max-age=60"));
  private static final List<Header> MUST = List.of(new Header("Cache-Control", "max-age=60, must-revalidate"));

  @Test
  void eachKindHasItsLifetime() {
    assertEquals(-1, Lifetime.IMMUTABLE.freshForMillis(MAX_AGE_60, METADATA_TTL, 0));
    assertEquals(300_000, Lifetime.METADATA.freshForMillis(MAX_AGE_60, METADATA_TTL, 0));
    assertEquals(10_000, Lifetime.fixed(Duration.ofSeconds(10)).freshForMillis(MAX_AGE_60, METADATA_TTL, 0));
    assertEquals(60_000, Lifetime.UPSTREAM.freshForMillis(MAX_AGE_60, METADATA_TTL, 0));
  }

  @Test
  void anUpstreamThatSaysNothingIsImmutableAsBefore() {
    assertEquals(-1, Lifetime.UPSTREAM.freshForMillis(List.of(new Header("ETag", "\"x\"")), METADATA_TTL, 0));
  }

  @Test
  void onlyTheUpstreamKindHonoursNoStoreAndMustRevalidate() {
    assertTrue(Lifetime.UPSTREAM.honoursNoStore());
    assertFalse(Lifetime.UPSTREAM.mayServeStale(MUST));
    assertTrue(Lifetime.UPSTREAM.mayServeStale(MAX_AGE_60));
    for (Lifetime other : List.of(Lifetime.IMMUTABLE, Lifetime.METADATA, Lifetime.fixed(Duration.ofMinutes(1)))) {
      assertFalse(other.honoursNoStore(), other.toString());
      assertTrue(other.mayServeStale(MUST), other.toString());
    }
  }

  @Test
  void aTtlBelongsToAFixedLifetimeOnly() {
    assertThrows(IllegalArgumentException.class, () -> new Lifetime(Lifetime.Kind.UPSTREAM, 5));
    assertThrows(IllegalArgumentException.class, () -> new Lifetime(Lifetime.Kind.FIXED, -1));
    assertThrows(IllegalArgumentException.class, () -> new Lifetime(null, 0));
  }
}
