package dev.corral.core.download;

import dev.corral.core.key.ArtifactKey;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What a fetch learns, where it runs, before it asks the upstream: the URL to ask and the digest
 * the bytes must have, when the key alone does not say (SEMANTICS K1: a digest Corral learns from
 * state it holds, an npm packument's {@code integrity}, is never part of the key).
 *
 * <p>Contract:
 * <ul>
 *   <li>Called by the one fetch of a key ({@link Download}) on whichever node runs it, once per
 *       upstream download (not for a copy from another node, which is verified against the
 *       record's sha256), before the upstream is asked; the bytes are verified against the
 *       answer before they are committed.
 *   <li>The answer must not depend on what this node holds: a document it needs (the packument)
 *       is read through the cache, coalesced cluster-wide like any other key, so every node
 *       obtains the same answer the same way.
 *   <li>A key that names its digest ({@link ArtifactKey#expected()} not null) keeps it: an
 *       implementation never weakens it.
 *   <li>Never blocks the calling thread. A stage that fails means the fetch fails (a 502, or a
 *       504 for a {@link java.util.concurrent.TimeoutException}) and nothing is stored: bytes
 *       that could not be verified are not committed as if they had been.
 * </ul>
 */
@FunctionalInterface
public interface FetchSources {

  /** The key's own URL and digest: every key that says all a fetch needs. */
  FetchSources AS_KEYED = key -> CompletableFuture.completedFuture(new FetchSource(key.url(), key.expected()));

  CompletionStage<FetchSource> of(ArtifactKey key);

  /**
   * What the digest should have been learned from could not be read (its upstream errs or is
   * down and no copy is held): the fetch fails with a 502, or a 504 when {@code timeout}.
   */
  final class Unavailable extends RuntimeException {
    private final boolean timeout;

    public Unavailable(String reason, boolean timeout) {
      super(reason, null, false, false);
      this.timeout = timeout;
    }

    public boolean isTimeout() {
      return timeout;
    }
  }
}
