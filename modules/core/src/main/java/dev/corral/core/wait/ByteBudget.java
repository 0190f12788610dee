package dev.corral.core.wait;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * A node-wide budget of heap bytes for bodies held whole at once (metadata read and rewritten,
 * documents a repository looks up): a byte-weighted semaphore that never blocks a thread. A
 * holder asks for the bytes it is about to hold and gives them back when it no longer holds
 * them. A request that does not fit waits, first come first served, at most {@code wait}; then it
 * fails with {@link Exhausted}, for the caller to answer 503 with {@code Retry-After}. A request
 * larger than the whole budget is granted when nothing else holds any, so that one oversized
 * document can still be served, alone.
 *
 * <p>Waits run on the node's scheduler, so tests advance time rather than sleep.
 */
public final class ByteBudget {

  /** The bytes could not be had within the wait. */
  public static final class Exhausted extends RuntimeException {
    public Exhausted(String message) {
      super(message, null, false, false);
    }
  }

  /** Bytes held; {@link #close} gives them back (once; later calls do nothing). */
  public final class Permit implements AutoCloseable {
    private final long bytes;
    private boolean closed;

    private Permit(long bytes) {
      this.bytes = bytes;
    }

    public long bytes() {
      return bytes;
    }

    @Override
    public void close() {
      release(this);
    }
  }

  private record Waiting(long bytes, CompletableFuture<Permit> granted) {}

  private final long total;
  private final Duration wait;
  private final Scheduler scheduler;
  private final Executor executor;
  private final ArrayDeque<Waiting> queue = new ArrayDeque<>();
  private long held;

  /**
   * @param total bytes that may be held at once, at least 1
   * @param wait how long a request that does not fit may wait
   * @param scheduler runs the waits' timeouts (the node's, in its ticker's time)
   * @param executor completes grants and timeouts
   */
  public ByteBudget(long total, Duration wait, Scheduler scheduler, Executor executor) {
    if (total < 1) {
      throw new IllegalArgumentException("a byte budget needs at least 1 byte");
    }
    this.total = total;
    this.wait = wait;
    this.scheduler = scheduler;
    this.executor = executor;
  }

  /** Unbounded, for tests and tools that need no admission. */
  public static ByteBudget unlimited() {
    return new ByteBudget(Long.MAX_VALUE, Duration.ZERO, Scheduler.disabledScheduler(), Runnable::run);
  }

  public long total() {
    return total;
  }

  /** Bytes held now. */
  public synchronized long held() {
    return held;
  }

  /** Requests waiting now. */
  public synchronized int waiting() {
    return queue.size();
  }

  /**
   * Asks for {@code bytes}: completes with the permit at once when they fit and nobody waits
   * before, else when enough is given back, or fails with {@link Exhausted} after the wait.
   */
  public CompletionStage<Permit> acquire(long bytes) {
    long want = Math.max(0, bytes);
    Waiting w;
    synchronized (this) {
      if (queue.isEmpty() && fits(want)) {
        held += want;
        return CompletableFuture.completedFuture(new Permit(want));
      }
      if (wait.isZero() || wait.isNegative()) {
        return CompletableFuture.failedFuture(exhausted(want));
      }
      w = new Waiting(want, new CompletableFuture<>());
      queue.add(w);
    }
    Future<?> timer = scheduler.schedule(executor, () -> {
      boolean removed;
      synchronized (this) {
        removed = queue.remove(w);
      }
      if (removed) {
        w.granted().completeExceptionally(exhausted(w.bytes()));
      }
    }, wait.toNanos(), TimeUnit.NANOSECONDS);
    w.granted().whenComplete((p, e) -> timer.cancel(false));
    return w.granted();
  }

  /** The bytes at once, or empty when they do not fit now (for a caller that cannot wait). */
  public synchronized java.util.Optional<Permit> tryAcquire(long bytes) {
    long want = Math.max(0, bytes);
    if (queue.isEmpty() && fits(want)) {
      held += want;
      return java.util.Optional.of(new Permit(want));
    }
    return java.util.Optional.empty();
  }

  private boolean fits(long want) {
    return held == 0 || want <= total - held;
  }

  private Exhausted exhausted(long want) {
    return new Exhausted("no room for " + want + " more bytes of metadata in memory (" + held() + " of " + total
        + " held)");
  }

  private void release(Permit p) {
    List<Waiting> granted = new ArrayList<>();
    synchronized (this) {
      if (p.closed) {
        return;
      }
      p.closed = true;
      held -= p.bytes;
      while (!queue.isEmpty() && fits(queue.peek().bytes())) {
        Waiting w = queue.poll();
        held += w.bytes();
        granted.add(w);
      }
    }
    for (Waiting w : granted) {
      Permit permit = new Permit(w.bytes());
      executor.execute(() -> {
        if (!w.granted().complete(permit)) {
          permit.close(); // cannot happen: only this grant or the removing timeout completes it
        }
      });
    }
  }
}
