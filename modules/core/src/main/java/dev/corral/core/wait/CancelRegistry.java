package dev.corral.core.wait;

import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The node's cancel tokens (SEMANTICS C1, C2): one per waiter, cancelled by the HTTP layer when
 * the waiter's client closes its connection. It lives on the node, not in the fetch entity, which
 * may passivate.
 *
 * <p>A waiter {@link #reserve reserves} a token, {@link #register registers} what to do when it is
 * cancelled, and {@link #release releases} the token when it has finished. {@link #cancel} runs the
 * registered callback once. A cancelled token is remembered (a <em>tombstone</em>) until it is
 * released or its TTL passes, so a registration that arrives after the cancel — late, or again — is
 * answered "cancelled" at once.
 *
 * <p>Bookkeeping is bounded: registrations leave on cancel or release; tombstones leave on release,
 * after their TTL, or oldest-first beyond a maximum count. Expired tombstones are collected lazily
 * from the public calls, at most once a second of ticker time; there is no background thread.
 *
 * <p>Thread-safe. Callbacks run outside the lock, on the thread that cancels (or, for a token
 * cancelled before its registration, the thread that registers); an exception a callback throws
 * reaches that caller after the registry's state is already updated.
 */
public final class CancelRegistry {
  /** Default time a cancel is remembered for a registration that has not arrived yet. */
  public static final Duration DEFAULT_TOMBSTONE_TTL = Duration.ofSeconds(120);
  /** Default cap on remembered cancels. */
  public static final int DEFAULT_MAX_TOMBSTONES = 100_000;

  private static final long COLLECT_INTERVAL_NANOS = Duration.ofSeconds(1).toNanos();

  private final Ticker ticker;
  private final long ttlNanos;
  private final int maxTombstones;
  private final AtomicLong nextToken = new AtomicLong(1);

  private final Object lock = new Object();
  private final Map<Long, Runnable> registrations = new HashMap<>();
  /** Token to the ticker time of its cancel; insertion order is cancel order, so oldest first. */
  private final LinkedHashMap<Long, Long> tombstones = new LinkedHashMap<>();
  private long lastCollect;
  private long collections; // for tests

  /**
   * @param ticker the only source of time
   * @param tombstoneTtl how long a cancel is remembered; positive
   * @param maxTombstones how many cancels are remembered at most; the oldest go first; positive
   */
  public CancelRegistry(Ticker ticker, Duration tombstoneTtl, int maxTombstones) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    if (tombstoneTtl.isNegative() || tombstoneTtl.isZero()) {
      throw new IllegalArgumentException("tombstoneTtl must be positive: " + tombstoneTtl);
    }
    if (maxTombstones <= 0) {
      throw new IllegalArgumentException("maxTombstones must be positive: " + maxTombstones);
    }
    this.ttlNanos = tombstoneTtl.toNanos();
    this.maxTombstones = maxTombstones;
    this.lastCollect = ticker.read();
  }

  /** System ticker, a 120 s tombstone TTL, at most 100 000 tombstones. */
  public static CancelRegistry withDefaults() {
    return new CancelRegistry(Ticker.systemTicker(), DEFAULT_TOMBSTONE_TTL, DEFAULT_MAX_TOMBSTONES);
  }

  /** A fresh token, unique in this registry: increasing, never 0 (callers may use 0 for "no token"). */
  public long reserve() {
    return nextToken.getAndIncrement();
  }

  /**
   * Registers what to do when {@code token} is cancelled.
   *
   * @return true if registered; false if the token was already cancelled, in which case {@code
   *     onCancel} has already run, on this thread, and nothing is registered
   * @throws IllegalArgumentException for token 0
   * @throws IllegalStateException if the token already has a registration (one callback per token)
   */
  public boolean register(long token, Runnable onCancel) {
    Objects.requireNonNull(onCancel, "onCancel");
    if (token == 0) {
      throw new IllegalArgumentException("token 0 means no token");
    }
    synchronized (lock) {
      long now = ticker.read();
      collectIfDue(now);
      if (!isTombstoned(token, now)) {
        if (registrations.putIfAbsent(token, onCancel) != null) {
          throw new IllegalStateException("token " + token + " is already registered");
        }
        return true;
      }
    }
    onCancel.run();
    return false;
  }

  /**
   * Cancels {@code token}: runs its registered callback (once, on this thread) and removes the
   * registration, and remembers the cancel for later registrations. Idempotent. Token 0 is ignored.
   */
  public void cancel(long token) {
    if (token == 0) {
      return;
    }
    Runnable onCancel;
    synchronized (lock) {
      long now = ticker.read();
      collectIfDue(now);
      onCancel = registrations.remove(token);
      if (!isTombstoned(token, now)) {
        tombstones.remove(token); // an expired one, not yet collected: re-insert at the young end
        tombstones.put(token, now);
        if (tombstones.size() > maxTombstones) {
          Iterator<Long> oldest = tombstones.keySet().iterator();
          oldest.next();
          oldest.remove();
        }
      }
    }
    if (onCancel != null) {
      onCancel.run();
    }
  }

  /** The waiter finished: forgets {@code token}, its registration and any tombstone. Idempotent. */
  public void release(long token) {
    synchronized (lock) {
      registrations.remove(token);
      tombstones.remove(token);
      collectIfDue(ticker.read());
    }
  }

  /** Registrations waiting for a cancel (for tests and metrics). */
  public int registrations() {
    synchronized (lock) {
      return registrations.size();
    }
  }

  /** Tombstones held, including expired ones not yet collected (for tests and metrics). */
  public int tombstones() {
    synchronized (lock) {
      return tombstones.size();
    }
  }

  /** How many collections of expired tombstones have run. */
  long collections() {
    synchronized (lock) {
      return collections;
    }
  }

  // Exact TTL even between collections: an expired tombstone no longer cancels.
  private boolean isTombstoned(long token, long now) {
    Long cancelledAt = tombstones.get(token);
    return cancelledAt != null && now - cancelledAt < ttlNanos;
  }

  private void collectIfDue(long now) {
    if (now - lastCollect < COLLECT_INTERVAL_NANOS) {
      return;
    }
    lastCollect = now;
    collections++;
    // Oldest first, so stop at the first one still alive.
    Iterator<Long> cancelledAt = tombstones.values().iterator();
    while (cancelledAt.hasNext() && now - cancelledAt.next() >= ttlNanos) {
      cancelledAt.remove();
    }
  }
}
