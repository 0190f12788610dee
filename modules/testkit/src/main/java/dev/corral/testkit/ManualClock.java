package dev.corral.testkit;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

/** A wall clock a test moves by hand (UTC), for a node's ages of stored copies and their last use. */
public final class ManualClock extends Clock {
  private final AtomicLong millis;

  public ManualClock(Instant start) {
    this.millis = new AtomicLong(start.toEpochMilli());
  }

  /** Starts at the system clock's now. */
  public ManualClock() {
    this(Instant.now());
  }

  public void advance(Duration by) {
    millis.addAndGet(by.toMillis());
  }

  @Override
  public ZoneId getZone() {
    return ZoneOffset.UTC;
  }

  @Override
  public Clock withZone(ZoneId zone) {
    return this;
  }

  @Override
  public Instant instant() {
    return Instant.ofEpochMilli(millis.get());
  }

  @Override
  public long millis() {
    return millis.get();
  }
}
