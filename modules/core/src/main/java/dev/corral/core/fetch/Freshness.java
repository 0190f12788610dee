package dev.corral.core.fetch;

import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.core.download.Outcome;
import java.time.Duration;
import java.util.Optional;

/**
 * What a key's entity remembers of the upstream's last answers between fetches: a not-found, for
 * the repository's {@code negative-ttl} (SEMANTICS W2: a not-found is cached briefly, a failure
 * never), and a failed revalidation of mutable metadata (stale-if-error: stale answers say so,
 * and the next revalidation waits a short pause). Time comes from the ticker only.
 */
final class Freshness {
  /** The longest pause between revalidations after one failed (shorter when the TTL is). */
  static final Duration REVALIDATION_RETRY = Duration.ofSeconds(30);

  private final Ticker ticker;
  private Outcome.NotFound notFound;
  private long notFoundUntil;
  private boolean revalidationFailed;
  private long revalidateNotBefore;

  Freshness(Ticker ticker) {
    this.ticker = ticker;
  }

  /** The not-found to answer without fetching, while it is within its TTL. */
  Optional<Outcome.NotFound> notFound() {
    if (notFound != null && ticker.read() - notFoundUntil < 0) {
      return Optional.of(notFound);
    }
    notFound = null;
    return Optional.empty();
  }

  /**
   * A fetch ended; {@code revalidation}: it was a conditional fetch of a stored copy, fresh for
   * {@code ttlMillis} after each fetch (-1: forever), which bounds the pause after a failure.
   */
  void ended(Outcome outcome, boolean revalidation, FetchPolicy policy, long ttlMillis) {
    if (outcome instanceof Outcome.NotFound nf) {
      notFound = nf;
      notFoundUntil = ticker.read() + policy.negativeTtl().toNanos();
    }
    if (revalidation) {
      revalidationFailed = outcome instanceof Outcome.Failed;
      if (revalidationFailed) {
        Duration ttl = ttlMillis < 0 ? REVALIDATION_RETRY : Duration.ofMillis(ttlMillis);
        Duration pause = ttl.compareTo(REVALIDATION_RETRY) < 0 ? ttl : REVALIDATION_RETRY;
        revalidateNotBefore = ticker.read() + pause.toNanos();
      }
    }
  }

  /** The last revalidation failed upstream: a stale answer is the last good copy. */
  boolean revalidationFailed() {
    return revalidationFailed;
  }

  /** Whether a stale answer may start a revalidation now (not during the pause after a failure). */
  boolean mayRevalidate() {
    return !revalidationFailed || ticker.read() - revalidateNotBefore >= 0;
  }

  /**
   * Whether something is still remembered: a not-found within its TTL, or the pause after a failed
   * revalidation. The entity does not passivate while it is (the memory dies with it).
   */
  boolean remembers() {
    return notFound().isPresent() || !mayRevalidate();
  }

  /** The key was purged: nothing is remembered. */
  void purged() {
    notFound = null;
    revalidationFailed = false;
  }
}
