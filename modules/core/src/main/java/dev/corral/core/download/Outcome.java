package dev.corral.core.download;

import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.util.ByteString;

/** How one download ended (or began, for a streaming body). The fetch entity tells each waiter. */
public sealed interface Outcome {

  /**
   * A small body, complete, verified and committed: one shared immutable ByteString.
   * {@code artifact} is null when the body was not stored (the upstream said {@code no-store} or
   * {@code private}; its headers then carry {@link Download#NOT_STORED}).
   */
  record Body(List<Header> headers, ByteString bytes, StoredArtifact artifact) implements Outcome {}

  /**
   * A large body that streamed to its waiters while it downloaded, complete and verified, and
   * was not stored (the upstream said {@code no-store} or {@code private}).
   */
  record PassedThrough(List<Header> headers, long length) implements Outcome {}

  /** Whether the outcome is a body that was answered but not stored. */
  static boolean notStored(Outcome outcome) {
    return outcome instanceof PassedThrough || outcome instanceof Body b && b.artifact() == null;
  }

  /** The bytes are committed in this node's store (a large body, or one of unknown length). */
  record Stored(StoredArtifact artifact) implements Outcome {}

  /**
   * A revalidation's 304: the stored bytes are still current; their fetched-at time (and
   * validators) were refreshed in this node's store.
   */
  record Revalidated(StoredArtifact artifact) implements Outcome {}

  /** A large body whose headers are known; it streams from {@link Downloads} while it downloads. */
  record Streaming(List<Header> headers, long length, long downloadId) implements Outcome {}

  /** The upstream said the artifact does not exist: 404, or 410 when {@code gone}. */
  record NotFound(boolean gone, List<Header> headers) implements Outcome {}

  /** The download failed after its retries. */
  record Failed(Failure cause, String reason) implements Outcome {}

  /** No peer could give the bytes (and the upstream was not to be asked): the waiter asks its entity again. */
  record Unavailable(String reason) implements Outcome {}
}
