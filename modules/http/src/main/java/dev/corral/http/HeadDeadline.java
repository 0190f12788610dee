package dev.corral.http;

import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 *
 * <p>A keep-alive connection moves its deadline twice per request, so the deadline is a time
 * read from the ticker and at most one timer is pending per connection: a timer that fires
 * before the current deadline schedules itself again for what is left, and a deadline that is
 * lifted cancels nothing (cancelling the scheduler's future costs an exception with its stack
 * trace: 6% of a hit's CPU when it was done per request).
 *
 * <p>The same events tell the node how many of its connections are answering a request: one
 * counts from its first request without a response sent until its last response is sent or until
 * it ends, whichever comes first. A graceful stop waits for none (SEMANTICS L4): a response whose
 * streamed body Pekko has not begun yet is counted as well as one being sent, and a body Pekko
 * never begins (its client gone) is let go when the connection ends.
 */
final class HeadDeadline {
  private static final long NONE = Long.MIN_VALUE;

  private final Scheduler scheduler;
  private final Ticker ticker;
  private final Duration headerReadTimeout;
  private final Duration idleTimeout;
  /** The node's count of connections answering a request, this one included while {@link #counted}. */
  private final AtomicInteger answeringConnections;
  private boolean counted;
  private Consumer<Boolean> expire;
  private boolean anyRequest;
  private int answering;
  /** When the next head is due (ticker nanos); {@link #NONE} while there is no deadline. */
  private long due = NONE;
  /** When the pending timer fires (ticker nanos); {@link #NONE} when no timer is pending. */
  private long timerDue = NONE;
  private Future<?> timer;
  private boolean over;

  HeadDeadline(Scheduler scheduler, Ticker ticker, Duration headerReadTimeout, Duration idleTimeout,
      AtomicInteger answeringConnections) {
    this.scheduler = scheduler;
    this.ticker = ticker;
    this.headerReadTimeout = headerReadTimeout;
    this.idleTimeout = idleTimeout;
    this.answeringConnections = answeringConnections;
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
    due = NONE;
    if (!counted && !over) {
      counted = true;
      answeringConnections.incrementAndGet();
    }
  }

  /** A response has been sent (its body ended, however): the next head is due within the idle timeout. */
  synchronized void responseSent() {
    answering = Math.max(0, answering - 1);
    if (answering == 0) {
      uncount();
      if (!over) {
        arm(idleTimeout);
      }
    }
  }

  /**
   * The connection ended: no deadline any more, and its timer is let go. {@code expire} (which
   * reaches the connection's whole stream) is dropped too: a timer still queued must not keep a
   * closed connection in memory until it is due (10 000 short connections held 250 MB that way).
   */
  synchronized void closed() {
    over = true;
    due = NONE;
    expire = null;
    uncount();
    if (timer != null) {
      timer.cancel(false);
      timer = null;
      timerDue = NONE;
    }
  }

  private void uncount() {
    if (counted) {
      counted = false;
      answeringConnections.decrementAndGet();
    }
  }

  private void arm(Duration after) {
    long now = ticker.read();
    due = now + after.toNanos();
    if (timerDue == NONE || due - timerDue < 0) {
      schedule(now, due);
    }
  }

  /** A timer for {@code at}; one pending for a later time is superseded (it will find nothing to do). */
  private void schedule(long now, long at) {
    timerDue = at;
    timer = scheduler.schedule(Runnable::run, () -> fire(at), at - now, TimeUnit.NANOSECONDS);
  }

  private void fire(long at) {
    boolean first;
    Consumer<Boolean> expiring;
    synchronized (this) {
      if (at != timerDue || over) {
        return; // superseded by an earlier timer, or the connection ended
      }
      timerDue = NONE;
      timer = null;
      if (due == NONE) {
        return; // a request is being answered: the next response arms again
      }
      long now = ticker.read();
      if (due - now > 0) {
        schedule(now, due); // the deadline moved on since this timer was set
        return;
      }
      over = true;
      first = !anyRequest;
      expiring = expire;
    }
    expiring.accept(first);
  }
}
