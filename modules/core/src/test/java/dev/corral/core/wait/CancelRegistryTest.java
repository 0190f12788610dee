package dev.corral.core.wait;

import dev.corral.core.wait.CancelRegistry;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class CancelRegistryTest {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  private final Ticker ticker = nanos::get;

  private void advance(Duration d) {
    nanos.addAndGet(d.toNanos());
  }

  private CancelRegistry registry() {
    return new CancelRegistry(ticker, CancelRegistry.DEFAULT_TOMBSTONE_TTL, 1_000);
  }

  @Test
  void tokensAreUniqueIncreasingAndNeverZero() {
    CancelRegistry registry = registry();
    Set<Long> seen = new HashSet<>();
    long previous = 0;
    for (int i = 0; i < 1_000; i++) {
      long token = registry.reserve();
      assertNotEquals(0, token);
      assertTrue(token > previous);
      assertTrue(seen.add(token));
      previous = token;
    }
  }

  @Test
  void cancelAfterRegisterRunsCallbackOnceAndRemovesRegistration() {
    CancelRegistry registry = registry();
    AtomicInteger runs = new AtomicInteger();
    long token = registry.reserve();

    assertTrue(registry.register(token, runs::incrementAndGet));
    assertEquals(1, registry.registrations());
    assertEquals(0, runs.get(), "registering alone must not cancel");

    registry.cancel(token);
    assertEquals(1, runs.get());
    assertEquals(0, registry.registrations());

    registry.cancel(token);
    assertEquals(1, runs.get(), "a second cancel must not run the callback again");
  }

  @Test
  void cancelOfOneTokenLeavesOthersRegistered() {
    CancelRegistry registry = registry();
    AtomicInteger a = new AtomicInteger();
    AtomicInteger b = new AtomicInteger();
    long ta = registry.reserve();
    long tb = registry.reserve();
    registry.register(ta, a::incrementAndGet);
    registry.register(tb, b::incrementAndGet);

    registry.cancel(ta);

    assertEquals(1, a.get());
    assertEquals(0, b.get());
    assertEquals(1, registry.registrations());
  }

  @Test
  void cancelBeforeRegisterAnswersTheLateRegistrationAtOnce() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    registry.cancel(token);
    assertEquals(1, registry.tombstones());

    AtomicReference<Thread> ranOn = new AtomicReference<>();
    assertFalse(registry.register(token, () -> ranOn.set(Thread.currentThread())));

    assertSame(Thread.currentThread(), ranOn.get(), "callback runs during register, on the caller");
    assertEquals(0, registry.registrations(), "a cancelled registration is not kept");
  }

  @Test
  void registerAgainAfterCancelIsAnsweredCancelled() {
    // A waiter that registers again (e.g. it asks a restarted entity again) must not wait forever
    // for a cancel that already happened.
    CancelRegistry registry = registry();
    long token = registry.reserve();
    AtomicInteger runs = new AtomicInteger();
    registry.register(token, runs::incrementAndGet);
    registry.cancel(token);

    assertFalse(registry.register(token, runs::incrementAndGet));
    assertEquals(2, runs.get());
    assertEquals(0, registry.registrations());
  }

  @Test
  void tombstoneExpiresAfterTtl() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    registry.cancel(token);

    advance(Duration.ofSeconds(121));
    AtomicInteger runs = new AtomicInteger();
    assertTrue(registry.register(token, runs::incrementAndGet));

    assertEquals(0, runs.get());
    assertEquals(0, registry.tombstones(), "the expired tombstone is collected");
    assertEquals(1, registry.registrations());
  }

  @Test
  void tombstoneStillCancelsJustBeforeTtl() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    registry.cancel(token);

    advance(Duration.ofSeconds(119));
    AtomicInteger runs = new AtomicInteger();
    assertFalse(registry.register(token, runs::incrementAndGet));
    assertEquals(1, runs.get());
  }

  @Test
  void expiredTombstoneNoLongerCancelsEvenBeforeItIsCollected() {
    CancelRegistry registry = registry();
    long old = registry.reserve();
    registry.cancel(old);
    advance(Duration.ofMillis(119_500));
    registry.cancel(registry.reserve()); // a collection runs here; `old` is still alive
    long collections = registry.collections();

    advance(Duration.ofMillis(600)); // `old` expired, but the next collection is not due yet
    AtomicInteger runs = new AtomicInteger();
    assertTrue(registry.register(old, runs::incrementAndGet));

    assertEquals(collections, registry.collections());
    assertEquals(0, runs.get());
  }

  @Test
  void collectionRunsAtMostOnceASecond() {
    CancelRegistry registry = new CancelRegistry(ticker, Duration.ofSeconds(10), 1_000);
    registry.cancel(registry.reserve()); // t = 0: a
    assertEquals(0, registry.collections());

    advance(Duration.ofMillis(9_500));
    registry.cancel(registry.reserve()); // t = 9.5: collection (nothing expired), b
    assertEquals(1, registry.collections());
    assertEquals(2, registry.tombstones());

    advance(Duration.ofMillis(600)); // t = 10.1: a has expired
    for (int i = 0; i < 100; i++) {
      registry.cancel(registry.reserve());
      registry.release(registry.reserve());
      registry.register(registry.reserve(), () -> {});
    }
    assertEquals(1, registry.collections(), "less than a second since the last collection");
    assertEquals(102, registry.tombstones(), "a is not collected yet");

    advance(Duration.ofMillis(400)); // t = 10.5: one second since the last collection
    registry.release(registry.reserve());
    assertEquals(2, registry.collections());
    assertEquals(101, registry.tombstones(), "a is collected");
  }

  @Test
  void releaseForgetsTheTokenAndALaterCancelLeavesATombstoneThatExpires() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    AtomicInteger runs = new AtomicInteger();
    registry.register(token, runs::incrementAndGet);

    registry.release(token);
    assertEquals(0, registry.registrations());
    assertEquals(0, registry.tombstones());

    registry.cancel(token); // the client closed after its waiter finished
    assertEquals(0, runs.get(), "a released waiter's callback never runs");
    assertEquals(1, registry.tombstones());

    advance(Duration.ofSeconds(121));
    registry.cancel(registry.reserve()); // any call collects
    assertEquals(1, registry.tombstones(), "only the fresh tombstone is left");
  }

  @Test
  void releaseOfACancelledTokenRemovesItsTombstone() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    registry.cancel(token);
    assertFalse(registry.register(token, () -> {}));

    registry.release(token);

    assertEquals(0, registry.tombstones());
    assertEquals(0, registry.registrations());
  }

  @Test
  void tombstonesBeyondTheMaximumAreDroppedOldestFirst() {
    CancelRegistry registry = new CancelRegistry(ticker, CancelRegistry.DEFAULT_TOMBSTONE_TTL, 3);
    long[] tokens = new long[5];
    for (int i = 0; i < tokens.length; i++) {
      tokens[i] = registry.reserve();
      registry.cancel(tokens[i]);
      advance(Duration.ofMillis(10));
    }

    assertEquals(3, registry.tombstones());
    assertTrue(registry.register(tokens[0], () -> {}), "oldest tombstone dropped");
    assertTrue(registry.register(tokens[1], () -> {}), "second oldest dropped");
    assertFalse(registry.register(tokens[2], () -> {}));
    assertFalse(registry.register(tokens[4], () -> {}));
  }

  @Test
  void repeatedCancelDoesNotGrowTheTombstones() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    for (int i = 0; i < 10; i++) {
      registry.cancel(token);
    }
    assertEquals(1, registry.tombstones());
  }

  @Test
  void oneRegistrationPerToken() {
    CancelRegistry registry = registry();
    long token = registry.reserve();
    registry.register(token, () -> {});
    assertThrows(IllegalStateException.class, () -> registry.register(token, () -> {}));
    assertThrows(IllegalArgumentException.class, () -> registry.register(0, () -> {}));
  }

  @Test
  void tokenZeroIsNoToken() {
    CancelRegistry registry = registry();
    registry.cancel(0);
    registry.release(0);
    assertEquals(0, registry.tombstones());
  }

  @Test
  void callbackRunsOutsideTheLock() throws Exception {
    CancelRegistry registry = registry();
    ExecutorService other = Executors.newSingleThreadExecutor();
    try {
      long token = registry.reserve();
      CompletableFuture<Integer> seenFromOtherThread = new CompletableFuture<>();
      registry.register(
          token,
          () -> {
            // Would block (and time out) if cancel still held the registry's lock.
            Future<Integer> f = other.submit(registry::registrations);
            try {
              seenFromOtherThread.complete(f.get(10, TimeUnit.SECONDS));
            } catch (Exception e) {
              seenFromOtherThread.completeExceptionally(e);
            }
          });

      registry.cancel(token);

      assertEquals(0, seenFromOtherThread.get(), "registration already removed when it runs");
    } finally {
      other.shutdownNow();
    }
  }

  @Test
  void concurrentCancelAndRegisterRunTheCallbackExactlyOnce() throws Exception {
    CancelRegistry registry = registry();
    int rounds = 10_000;
    CyclicBarrier start = new CyclicBarrier(2);
    ExecutorService canceller = Executors.newSingleThreadExecutor();
    int registeredFirst = 0;
    try {
      for (int i = 0; i < rounds; i++) {
        long token = registry.reserve();
        AtomicInteger runs = new AtomicInteger();
        Future<?> cancel =
            canceller.submit(
                () -> {
                  start.await(10, TimeUnit.SECONDS);
                  registry.cancel(token);
                  return null;
                });
        start.await(10, TimeUnit.SECONDS);
        boolean registered = registry.register(token, runs::incrementAndGet);
        cancel.get(10, TimeUnit.SECONDS);

        assertEquals(1, runs.get(), "round " + i + ", registered=" + registered);
        assertEquals(0, registry.registrations(), "round " + i);
        registry.release(token);
        assertEquals(0, registry.tombstones(), "round " + i);
        if (registered) {
          registeredFirst++;
        }
      }
    } finally {
      canceller.shutdownNow();
    }
    // Not asserted (timing-dependent), but shows whether both orders were exercised.
    System.out.printf("register won %d of %d rounds%n", registeredFirst, rounds);
  }
}
