package dev.corral.testkit;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A ticker that moves only when the test says so: hand it to a node ({@link TestNode#start(java.nio.file.Path,
 * String, Ticker, String, String...)} or {@link TestNodeExtension#ticker}) and every interval the
 * node measures with it (the negative TTL, the pause after a failed revalidation, cancel
 * tombstones) passes exactly when {@link #advance} is called, however slow the machine. A
 * {@link ManualScheduler} made with it runs the node's timers (budgets, re-asks, retry pauses)
 * in the same time: {@link #advance} returns once every timer due by then has run.
 */
public final class ManualTicker implements Ticker {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  private final List<Runnable> onAdvance = new CopyOnWriteArrayList<>();

  @Override
  public long read() {
    return nanos.get();
  }

  public void advance(Duration by) {
    if (by.isNegative()) {
      throw new IllegalArgumentException("time does not go back: " + by);
    }
    nanos.addAndGet(by.toNanos());
    for (Runnable r : onAdvance) {
      r.run();
    }
  }

  /**
   * A wall clock that moves with this ticker, from the real time it is made at: give it to a node
   * ({@link TestNodeExtension#clock}) and a stored copy's age grows exactly by what the test
   * advances.
   */
  public java.time.Clock clock() {
    long startMillis = System.currentTimeMillis();
    long startNanos = read();
    ManualTicker ticker = this;
    return new java.time.Clock() {
      @Override
      public java.time.ZoneId getZone() {
        return java.time.ZoneOffset.UTC;
      }

      @Override
      public java.time.Clock withZone(java.time.ZoneId zone) {
        return this;
      }

      @Override
      public long millis() {
        return startMillis + (ticker.read() - startNanos) / 1_000_000;
      }

      @Override
      public java.time.Instant instant() {
        return java.time.Instant.ofEpochMilli(millis());
      }
    };
  }

  /** Runs {@code listener} on the advancing thread after each {@link #advance}. */
  void onAdvance(Runnable listener) {
    onAdvance.add(listener);
  }
}
