package dev.corral.registry;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import org.apache.pekko.util.ByteString;

/**
 * Serve-time rewrites remembered by what determines them: the stored body's content fingerprint
 * and the rewrite's inputs (the base URL and the name). A hot packument or index page is then
 * rewritten once per base URL, not on every request, and nothing rewritten is ever stored with
 * the artifact. Bounded by the bytes held.
 */
public final class RewrittenBodies {
  private final Cache<String, ByteString> memo;

  public RewrittenBodies(long maxBytes) {
    this.memo = Caffeine.newBuilder()
        .maximumWeight(maxBytes)
        .weigher((String k, ByteString v) -> (int) Math.min(Integer.MAX_VALUE, (long) v.length() + k.length()))
        .build();
  }

  /**
   * A rewrite that remembers its results.
   *
   * @param inputs everything besides the body that the rewrite's output depends on
   */
  public BodyRewrite memoized(String inputs, BodyRewrite rewrite) {
    return stored -> memo.get(inputs + '\n' + ParsedBodies.fingerprint(stored), k -> rewrite.rewrite(stored));
  }

  /** Bodies held now (for tests). */
  long size() {
    memo.cleanUp();
    return memo.estimatedSize();
  }
}
