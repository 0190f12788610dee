package dev.corral.http.upstream;

import dev.corral.core.upstream.UpstreamException;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One repository's requests waiting for a connection of its upstream pool (SEMANTICS K2: a cap on
 * concurrent fetches per upstream is a queue, never a failure). At most {@code capacity} requests
 * hold a {@link Slot} at once, one per pool connection, so Pekko's pool never queues or refuses
 * them itself; the rest wait here in arrival order, and a request's first-byte timer starts only
 * when it leaves the queue. Past {@link #LIMIT} waiting requests (memory, not time, is the bound)
 * a request fails at once with an {@link UpstreamException} of reason {@link
 * UpstreamException#QUEUE_FULL}: 503, never a silent drop.
 *
 * <p>A slot is held from the request until its response's body has ended (read, failed, cancelled
 * or discarded), because until then the connection serves nobody else.
 */
final class PoolQueue {
  /** How many requests may wait at once before further ones are refused. */
  static final int LIMIT = 16384;

  private final String repo;
  private final int capacity;
  private final int limit;
  /** Guarded by {@code this}. */
  private final ArrayDeque<CompletableFuture<Slot>> waiting = new ArrayDeque<>();
  private int running;

  PoolQueue(String repo, int capacity) {
    this(repo, capacity, LIMIT);
  }

  PoolQueue(String repo, int capacity, int limit) {
    if (capacity < 1 || limit < 0) {
      throw new IllegalArgumentException("capacity " + capacity + ", limit " + limit);
    }
    this.repo = repo;
    this.capacity = capacity;
    this.limit = limit;
  }

  /** A request's slot: at once when one is free, else once one is handed over to it in turn. */
  CompletionStage<Slot> enter() {
    synchronized (this) {
      if (running < capacity) {
        running++;
        return CompletableFuture.completedFuture(new Slot());
      }
      if (waiting.size() >= limit) {
        return CompletableFuture.failedFuture(new UpstreamException(UpstreamException.QUEUE_FULL,
            "upstream queue of repository " + repo + " is full (" + limit + " requests waiting)", false, null));
      }
      CompletableFuture<Slot> turn = new CompletableFuture<>();
      waiting.add(turn);
      return turn;
    }
  }

  /** Requests holding a slot. */
  synchronized int running() {
    return running;
  }

  /** Requests waiting for one. */
  synchronized int waiting() {
    return waiting.size();
  }

  private void handOver() {
    CompletableFuture<Slot> next;
    synchronized (this) {
      next = waiting.poll();
      if (next == null) {
        running--;
        return;
      }
    }
    // Completed outside the lock: the next request is sent on this thread.
    next.complete(new Slot());
  }

  /** One request's place on a connection; released once, when its response is done with. */
  final class Slot {
    private final AtomicBoolean released = new AtomicBoolean();

    void release() {
      if (released.compareAndSet(false, true)) {
        handOver();
      }
    }
  }

}
