package dev.corral.http;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The header-read timeout of one connection. Pekko HTTP has none of its own: its idle timeout
 * starts again with every byte, so a client trickling a request head byte by byte (slowloris)
 * would hold its connection forever. This deadline runs on whole requests instead:
 *
 * <ul>
 *   <li>from the connection's start, its first request head must be complete within the
 *       header-read timeout;
 *   <li>once every response has been sent, the next request head must be complete within the
 *       idle timeout (a keep-alive connection may wait that long between requests);
 *   <li>while a request is being answered there is no deadline (waiters have their own budget).
 * </ul>
 *
 * When a deadline passes, {@code expire} runs once with whether it was the first request's head
 * (the front door then closes the connection). Thread-safe: requests arrive on the stream,
 * responses end on their body's stream, timers fire on the scheduler's executor.
 */
final class HeadDeadline {
  private final Scheduler scheduler;
  private final Duration headerReadTimeout;
  private final Duration idleTimeout;
  private Consumer<Boolean> expire;
  private boolean anyRequest;
  private int answering;
  private long armed; // which arming a firing timer belongs to
  private Future<?> timer;
  private boolean over;

  HeadDeadline(Scheduler scheduler, Duration headerReadTimeout, Duration idleTimeout) {
    this.scheduler = scheduler;
    this.headerReadTimeout = headerReadTimeout;
    this.idleTimeout = idleTimeout;
  }

  /** The connection has started: its first head is due within the header-read timeout. */
  synchronized void start(Consumer<Boolean> expire) {
    this.expire = expire;
    if (!over && !anyRequest) {
      arm(headerReadTimeout);
    }
  }

  /** A request head is complete: no deadline until its response has been sent. */
  synchronized void requestArrived() {
    anyRequest = true;
    answering++;
    disarm();
  }

  /** A response has been sent (its body ended, however): the next head is due within the idle timeout. */
  synchronized void responseSent() {
    answering = Math.max(0, answering - 1);
    if (answering == 0 && !over) {
      arm(idleTimeout);
    }
  }

  /** The connection ended: no deadline any more. */
  synchronized void closed() {
    over = true;
    disarm();
  }

  private void arm(Duration after) {
    disarm();
    long arming = ++armed;
    timer = scheduler.schedule(Runnable::run, () -> fire(arming), after.toNanos(), TimeUnit.NANOSECONDS);
  }

  private void disarm() {
    armed++;
    if (timer != null) {
      timer.cancel(false);
      timer = null;
    }
  }

  private void fire(long arming) {
    boolean first;
    synchronized (this) {
      if (arming != armed || over) {
        return;
      }
      over = true;
      timer = null;
      first = !anyRequest;
    }
    expire.accept(first);
  }
}
