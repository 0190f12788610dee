package dev.corral.core.fetch;

import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Lifetime;
import java.time.Duration;

/**
 * Per-repository rules of the fetch entity and its waiters.
 *
 * @param inlineLimit bodies up to this size are answered only once complete and verified, as one
 *     shared {@code ByteString}; larger ones stream to waiters while they download (SEMANTICS B2)
 * @param negativeTtl how long an upstream 404/410 is remembered
 * @param waiterBudget how long a waiter waits for the outcome to begin (SEMANTICS W3)
 * @param bypassOnBudget when the budget runs out: false = 504, true = a direct uncached fetch
 * @param maxWaiters waiters one key may hold; more are refused with 503 (bounded bookkeeping, F4)
 * @param maxOrphanFetches fetches per repository that may keep running with no waiter left (C3)
 * @param metadataTtl how long a stored copy of mutable metadata is fresh after it was fetched or
 *     last revalidated; {@code 0} revalidates on every request
 * @param maxStale how long past its TTL a stale copy may still be served at once (while one
 *     revalidation runs, or after the upstream failed); an older copy makes its request wait for
 *     the revalidation
 */
public record FetchPolicy(
    long inlineLimit,
    Duration negativeTtl,
    Duration waiterBudget,
    boolean bypassOnBudget,
    int maxWaiters,
    int maxOrphanFetches,
    Duration metadataTtl,
    Duration maxStale) {

  public static final Duration DEFAULT_METADATA_TTL = Duration.ofMinutes(5);
  public static final Duration DEFAULT_MAX_STALE = Duration.ofHours(24);

  /** With the default metadata TTL (5 min) and max-stale (24 h). */
  public FetchPolicy(long inlineLimit, Duration negativeTtl, Duration waiterBudget,
      boolean bypassOnBudget, int maxWaiters, int maxOrphanFetches) {
    this(inlineLimit, negativeTtl, waiterBudget, bypassOnBudget, maxWaiters, maxOrphanFetches,
        DEFAULT_METADATA_TTL, DEFAULT_MAX_STALE);
  }

  /** SEMANTICS W3's default budget: twice the upstream first-byte timeout plus 3 s. */
  public static Duration defaultBudget(Duration firstByteTimeout) {
    return firstByteTimeout.multipliedBy(2).plusSeconds(3);
  }

  public static FetchPolicy defaults() {
    return new FetchPolicy(
        8L * 1024 * 1024, Duration.ofSeconds(30), defaultBudget(Duration.ofSeconds(30)), false,
        10_000, 16);
  }

  /** The same policy with other freshness rules. */
  public FetchPolicy withFreshness(Duration metadataTtl, Duration maxStale) {
    return new FetchPolicy(inlineLimit, negativeTtl, waiterBudget, bypassOnBudget, maxWaiters,
        maxOrphanFetches, metadataTtl, maxStale);
  }

  /** Whether a stored copy of mutable metadata may be served without asking the upstream. */
  public boolean isFresh(StoredArtifact stored, long nowMillis) {
    return isFresh(stored, nowMillis, Lifetime.METADATA);
  }

  /** Whether a stale copy of mutable metadata is still young enough to be served as STALE. */
  public boolean mayServeStale(StoredArtifact stored, long nowMillis) {
    return mayServeStale(stored, nowMillis, Lifetime.METADATA);
  }

  /** Whether a stored copy of a key with {@code lifetime} may be served without asking the upstream. */
  public boolean isFresh(StoredArtifact stored, long nowMillis, Lifetime lifetime) {
    long ttl = freshForMillis(stored, lifetime);
    return ttl < 0 || nowMillis - stored.fetchedAtMillis() < ttl;
  }

  /**
   * Whether a stale copy of a key with {@code lifetime} is still young enough, and allowed, to be
   * served as STALE (never one the upstream said {@code must-revalidate} of).
   */
  public boolean mayServeStale(StoredArtifact stored, long nowMillis, Lifetime lifetime) {
    long ttl = freshForMillis(stored, lifetime);
    if (ttl < 0) {
      return true;
    }
    return lifetime.mayServeStale(stored.headers())
        && nowMillis - stored.fetchedAtMillis() < ttl + maxStale.toMillis();
  }

  /** How long the stored copy is fresh after its fetch, in milliseconds; -1: forever. */
  public long freshForMillis(StoredArtifact stored, Lifetime lifetime) {
    return lifetime.freshForMillis(stored.headers(), metadataTtl, stored.fetchedAtMillis());
  }
}
