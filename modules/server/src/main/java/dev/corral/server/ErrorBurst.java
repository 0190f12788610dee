package dev.corral.server;

import java.time.Duration;
import java.util.function.LongSupplier;

/**
 * Counts a repeated event and lets at most one report of it through per interval: the first at
 * once, then the next one due carries how many happened since the last report. Time comes from
 * {@code nanos} (System::nanoTime, or a test's ticker).
 */
final class ErrorBurst {
  private final LongSupplier nanos;
  private final long intervalNanos;
  private long unreported;
  private boolean everReported;
  private long lastReport;

  ErrorBurst(LongSupplier nanos, Duration interval) {
    this.nanos = nanos;
    this.intervalNanos = interval.toNanos();
  }

  /**
   * Counts one event.
   *
   * @return 0 when no report is due, else the number of events the report stands for (this one
   *     included, so at least 1)
   */
  synchronized long count() {
    unreported++;
    long now = nanos.getAsLong();
    if (everReported && now - lastReport < intervalNanos) {
      return 0;
    }
    everReported = true;
    lastReport = now;
    long n = unreported;
    unreported = 0;
    return n;
  }
}
