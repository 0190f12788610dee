package dev.corral.http;

import com.github.benmanes.caffeine.cache.AsyncCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.wait.ByteBudget;
import dev.corral.registry.BodyRewrite;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.util.ByteString;

/**
 * Rewritten metadata (and the gzip forms of metadata bodies), remembered by the stored body's
 * SHA-256 and the rewrite's inputs, before anything is read: every request for a stored version shares one read and one rewrite, however
 * many arrive at once (the first computes, the others wait for its result), and a hot packument
 * costs its bytes once, not once per request. The read and the rewrite hold their bytes under
 * the node's {@link ByteBudget} (input plus output); a rewrite that cannot get them within the
 * budget's wait fails with {@link ByteBudget.Exhausted}. The remembered results are bounded by
 * the same number of bytes; a body's gzip form ({@link #gzipped}) is remembered in the same memo,
 * beside the body it encodes, and counts against the same bound.
 */
final class RewrittenMetadata {
  /**
   * A body as served and its ETag: a rewritten body's is a hash of its bytes; a gzip form's is
   * {@link GzipForm#etag}. Both computed once.
   */
  record Rewritten(ByteString body, String etag) {}

  private final AsyncCache<String, Rewritten> memo;
  private final ByteBudget budget;
  private final ArtifactStore store;
  private final HotBlobs hot;
  private final Executor io;
  private final AtomicLong gzips = new AtomicLong();

  RewrittenMetadata(ByteBudget budget, ArtifactStore store, HotBlobs hot, Executor io) {
    this.budget = budget;
    this.store = store;
    this.hot = hot;
    this.io = io;
    this.memo = Caffeine.newBuilder()
        .maximumWeight(Math.min(budget.total(), Long.MAX_VALUE / 2))
        .weigher((String k, Rewritten v) -> (int) Math.min(Integer.MAX_VALUE, (long) v.body().length() + k.length()))
        .executor(io)
        .buildAsync();
  }

  /**
   * The stored artifact's body rewritten; its inputs name everything besides the body that the
   * rewrite depends on (empty: not remembered, read and rewritten for this request alone).
   */
  CompletionStage<Rewritten> rewritten(StoredArtifact artifact, Optional<String> inputs, BodyRewrite rewrite) {
    if (inputs.isEmpty()) {
      return compute(artifact, rewrite);
    }
    String key = artifact.keyId() + '\n' + artifact.sha256() + '\n' + inputs.get();
    return memo.get(key, (k, executor) -> compute(artifact, rewrite).toCompletableFuture());
  }

  /**
   * The gzip form of a metadata body already in memory, remembered by the digest of its identity
   * bytes and its identity ETag: made once per stored version (and rewrite inputs), shared by
   * every request, however many arrive at once. Its output is held under the budget while it is
   * made; no room within the budget's wait fails with {@link ByteBudget.Exhausted}, and nothing
   * is remembered.
   *
   * @param digest hex naming the identity bytes (their SHA-256, or the hash in a rewritten body's ETag)
   * @param etag the identity form's ETag, or null
   */
  CompletionStage<Rewritten> gzipped(String digest, String etag, ByteString identity) {
    String key = "gzip\n" + digest + '\n' + (etag == null ? "" : etag);
    return memo.get(key, (k, executor) -> budget.acquire(identity.length()).thenApplyAsync(permit -> {
      try (permit) {
        gzips.incrementAndGet();
        return new Rewritten(GzipForm.encode(identity), GzipForm.etag(etag, digest));
      }
    }, io).toCompletableFuture());
  }

  /** Rewrites bytes already in memory (a bypassed fetch): the output alone is held under the budget. */
  CompletionStage<Rewritten> rewritten(ByteString body, BodyRewrite rewrite) {
    return budget.acquire(body.length()).thenApplyAsync(permit -> {
      try (permit) {
        return of(rewrite.rewrite(body));
      }
    }, io);
  }

  private CompletionStage<Rewritten> compute(StoredArtifact artifact, BodyRewrite rewrite) {
    // Input and output are both on the heap while the rewrite runs.
    return budget.acquire(2 * artifact.size()).thenApplyAsync(permit -> {
      try (permit) {
        ByteString stored = hot.get(artifact.sha256()).orElseGet(() -> read(artifact));
        return of(rewrite.rewrite(stored));
      }
    }, io);
  }

  private ByteString read(StoredArtifact artifact) {
    try {
      return store.readAll(artifact);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Rewritten of(ByteString body) {
    return new Rewritten(body, "\"" + Sha256.hex(body).substring(0, 32) + "\"");
  }

  /** Gzip forms made so far (for tests). */
  long gzipsMade() {
    return gzips.get();
  }

  /** Results remembered now (for tests). */
  long size() {
    return memo.synchronous().estimatedSize();
  }
}
