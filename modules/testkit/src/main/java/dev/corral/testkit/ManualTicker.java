package dev.corral.testkit;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A ticker that moves only when the test says so: hand it to a node ({@link TestNode#start(java.nio.file.Path,
 * String, Ticker, String, String...)} or {@link TestNodeExtension#ticker}) and every interval the
 * node measures with it (the negative TTL, the pause after a failed revalidation, cancel
 * tombstones) passes exactly when {@link #advance} is called, however slow the machine.
 */
public final class ManualTicker implements Ticker {
  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);

  @Override
  public long read() {
    return nanos.get();
  }

  public void advance(Duration by) {
    nanos.addAndGet(by.toNanos());
  }
}
