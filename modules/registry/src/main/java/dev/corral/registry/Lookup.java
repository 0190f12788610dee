package dev.corral.registry;

import dev.corral.core.key.ArtifactKey;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.util.ByteString;

/**
 * Reads another key's body through the cache, for a repository that must know one document to
 * resolve a request (the index page naming a file's upstream URL and {@code sha256}) or to tell a
 * fetch where its bytes come from and what they must hash to ({@link Repository#source}: the
 * packument naming a tarball's {@code dist.integrity}, the {@code .sha1} of a Maven artifact).
 *
 * <p>A lookup is an ordinary request inside Corral: coalesced with every other request for that
 * key, cluster-wide, stored, and fresh within the metadata TTL when {@code mutable}.
 */
public interface Lookup {

  /**
   * The key's body.
   *
   * @return the bytes; empty when the upstream says the key does not exist (404/410). Fails
   *     with {@link LookupFailed} when the upstream errs or the wait runs out of budget.
   */
  CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable);

  /** The key's body when this node's store already holds it; never fetches. */
  Optional<ByteString> cached(ArtifactKey key);

  /**
   * The SHA-256 of the key's body when this node's store already holds it, without reading the
   * body: what a repository remembers its parse of a document by, and how it asks whether a
   * document is held. Never fetches.
   */
  default Optional<String> cachedDigest(ArtifactKey key) {
    return cached(key).map(dev.corral.core.key.Sha256::hex);
  }

  /** A lookup that could not get an answer; {@code status} is what the client should get. */
  final class LookupFailed extends RuntimeException {
    private final int status;

    public LookupFailed(int status, String reason) {
      super(reason, null, false, false);
      this.status = status;
    }

    public int status() {
      return status;
    }
  }
}
