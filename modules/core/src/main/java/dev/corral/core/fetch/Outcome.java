package dev.corral.core.fetch;

import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.util.ByteString;

/** How one fetch ended (or began, for a streaming body). Turned into a {@link FetchEntity.Reply} per waiter. */
sealed interface Outcome {
  FetchEntity.Reply toReply(FetchEntity.Via via);

  /** A small body, complete, verified and committed: one shared immutable ByteString. */
  record Body(int status, List<Header> headers, ByteString bytes, StoredArtifact artifact) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Body(via, status, headers, bytes);
    }
  }

  /** The bytes are committed in this node's store (a large body, or one of unknown length). */
  record Stored(StoredArtifact artifact) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Stored(via, artifact);
    }
  }

  /**
   * A revalidation's 304: the stored bytes are still current; their fetched-at time (and
   * validators) were refreshed in this node's store.
   */
  record Revalidated(StoredArtifact artifact) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Stored(via, artifact);
    }
  }

  /** A large body whose headers are known; it streams from {@link Downloads} while it downloads. */
  record Streaming(int status, List<Header> headers, long length, long downloadId) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Streaming(via, status, headers, length, downloadId);
    }
  }

  /** The upstream said 404 or 410. */
  record NotFound(int status, List<Header> headers) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.NotFound(via, status, headers);
    }
  }

  /** The fetch failed after its retries: 502 (upstream error, bad bytes) or 504 (timeout). */
  record Failed(int status, String reason) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Failed(status, reason);
    }
  }

  /** No peer could give the bytes (and the upstream was not to be asked): the waiter asks its entity again. */
  record Unavailable(String reason) implements Outcome {
    public FetchEntity.Reply toReply(FetchEntity.Via via) {
      return new FetchEntity.Retry(reason);
    }
  }
}
