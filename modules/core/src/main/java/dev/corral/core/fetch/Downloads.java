package dev.corral.core.fetch;

import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * This node's large bodies that are still downloading, by download id. A waiter told to stream
 * download N finds it here; once the download has ended it is gone, and the waiter serves the
 * committed bytes from the store instead (or answers 502 when nothing was committed).
 */
public final class Downloads {
  private final ConcurrentHashMap<Long, GrowingBlob> running = new ConcurrentHashMap<>();
  /**
   * A new download id: random, not sequential, so that the peer endpoint's
   * {@code /-/peer/downloads/<id>} cannot be walked to read what other clients are downloading.
   * (Below 10^18, the endpoint's 18 digits.)
   */
  long nextId() {
    return java.util.concurrent.ThreadLocalRandom.current().nextLong(1, 1_000_000_000_000_000_000L);
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
