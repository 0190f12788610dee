package dev.corral.core.fetch;

import java.time.Duration;

/**
 * What a node's fetch entities and waiters report as they work, for metrics (the role of
 * Caffeine's {@code StatsCounter}). Core knows no metrics library; the HTTP edge implements this
 * with Prometheus.
 *
 * <p>Contract: called on the entities' and waiters' own threads, so an implementation must be
 * thread-safe, fast and non-blocking, and must not throw. Every {@link #fetchStarted} is followed
 * by exactly one {@link #fetchEnded} for the same repository, however the fetch ends.
 */
public interface FetchEvents {
  /** Reports nothing. */
  FetchEvents NONE = new FetchEvents() {};

  /** Why a waiter stopped waiting for a shared fetch (SEMANTICS W3). */
  enum FallThrough {
    /** Its budget ran out before the outcome began. */
    BUDGET("budget"),
    /** Its entity stopped without an outcome; it asks again. */
    ENTITY_STOPPED("entity-stopped");

    private final String label;

    FallThrough(String label) {
      this.label = label;
    }

    /** The metric label, as SEMANTICS names it. */
    public String label() {
      return label;
    }
  }

  /** A fetch of one of the repository's keys started. */
  default void fetchStarted(String repo) {}

  /** A fetch's download ended with an outcome after {@code took} (before {@link #fetchEnded}). */
  default void fetchCompleted(String repo, Duration took) {}

  /** A fetch ended, with or without an outcome (completed, abandoned, or its entity stopped). */
  default void fetchEnded(String repo) {}

  /**
   * An upstream download of the repository's starts without a digest to verify it against,
   * although its kind of key is verified: its upstream published none ({@link
   * dev.corral.core.download.FetchSource#unverified}).
   */
  default void fetchUnverified(String repo) {}

  /** {@code waiters} requests of the repository stopped waiting, for {@code reason}. */
  default void fellThrough(String repo, FallThrough reason, int waiters) {}

  /**
   * A node's copy waits at this entity for a source with a free upload slot (issue 17, fan-out);
   * {@link #peerUploadWaitEnded} follows when it is pointed at one (or the entity stopped).
   */
  default void peerUploadWaitStarted() {}

  /** A wait {@link #peerUploadWaitStarted} announced ended after {@code waited}. */
  default void peerUploadWaitEnded(Duration waited) {}
}
