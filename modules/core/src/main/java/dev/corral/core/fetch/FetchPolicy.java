package dev.corral.core.fetch;

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
 */
public record FetchPolicy(
    long inlineLimit,
    Duration negativeTtl,
    Duration waiterBudget,
    boolean bypassOnBudget,
    int maxWaiters,
    int maxOrphanFetches) {

  /** SEMANTICS W3's default budget: twice the upstream first-byte timeout plus 3 s. */
  public static Duration defaultBudget(Duration firstByteTimeout) {
    return firstByteTimeout.multipliedBy(2).plusSeconds(3);
  }

  public static FetchPolicy defaults() {
    return new FetchPolicy(
        8L * 1024 * 1024, Duration.ofSeconds(30), defaultBudget(Duration.ofSeconds(30)), false,
        10_000, 16);
  }
}
