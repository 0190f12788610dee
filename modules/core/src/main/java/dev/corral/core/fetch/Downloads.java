package dev.corral.core.fetch;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * This node's large bodies that are still downloading, by download id. A waiter told to stream
 * download N finds it here; once the download has ended it is gone, and the waiter serves the
 * committed bytes from the store instead (or answers 502 when nothing was committed).
 */
public final class Downloads {
  private final ConcurrentHashMap<Long, GrowingBlob> running = new ConcurrentHashMap<>();
  private final AtomicLong ids = new AtomicLong();

  long nextId() {
    return ids.incrementAndGet();
  }

  void put(long id, GrowingBlob blob) {
    running.put(id, blob);
  }

  void remove(long id) {
    running.remove(id);
  }

  public Optional<GrowingBlob> find(long id) {
    return Optional.ofNullable(running.get(id));
  }

  /** References held on the running downloads: one per download (its writer) plus one per reader. */
  public int references() {
    return running.values().stream().mapToInt(GrowingBlob::references).sum();
  }
}
