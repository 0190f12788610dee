package dev.corral.core.fetch;

import dev.corral.core.download.PeerBlobs;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import dev.corral.core.ByteStringModule;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.CborSerializable;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.util.ByteString;

/** What a waiter is told by the key's {@link FetchEntity}: the outcome as this waiter sees it. */
public sealed interface Reply extends CborSerializable {
  /** A small body, complete and verified: one immutable ByteString shared by every waiter. */
  record Body(Via via, List<Header> headers,
      @JsonSerialize(using = ByteStringModule.Writer.class) @JsonDeserialize(using = ByteStringModule.Reader.class)
      ByteString bytes) implements Reply {}

  /** The bytes are committed in this node's store: serve them from there. */
  record Stored(Via via, StoredArtifact artifact) implements Reply {}

  /**
   * A stale copy of mutable metadata, committed in this node's store, served at once while one
   * revalidation runs ({@code X-Cache: STALE}). {@code revalidationFailed}: the last revalidation
   * failed upstream, so this is the last good copy (stale-if-error).
   */
  record Stale(StoredArtifact artifact, boolean revalidationFailed) implements Reply {}

  /** A large body that streams from {@link Downloads} while it downloads. */
  record Streaming(Via via, List<Header> headers, long length, long downloadId)
      implements Reply {}

  /**
   * For a waiter on another node: a small verified body inside the reply. Bounded by
   * {@link Node.Peering#inlineLimit()} so that it always fits Artery's large-message frame (a
   * larger message would be dropped with only a log line). The waiter's node checks the SHA-256,
   * answers its clients and keeps a replica, as old as the holder's copy ({@code fetchedAtMillis};
   * -1: fetched just now), so a copy of mutable metadata never looks fresher than its source.
   */
  record Inline(Via via, List<Header> headers,
      @JsonSerialize(using = ByteStringModule.Writer.class) @JsonDeserialize(using = ByteStringModule.Reader.class)
      ByteString bytes, String sha256, long fetchedAtMillis) implements Reply {
    public Inline(Via via, List<Header> headers, ByteString bytes, String sha256) {
      this(via, headers, bytes, sha256, -1);
    }
  }

  /**
   * For a waiter on another node: read the body from the node at {@code peerUrl}, which holds it
   * committed ({@code downloadId < 0}; {@code sha256} names the blob) or is still downloading it
   * (download {@code downloadId}; {@code sha256} is null). The waiter's node copies it once,
   * streams the copy to its clients and keeps a verified replica, as old as the holder's copy
   * ({@code fetchedAtMillis}; -1: fetched just now).
   */
  record FromPeer(Via via, List<Header> headers, long length, String peerUrl, String sha256,
      long downloadId, long fetchedAtMillis) implements Reply {
    public FromPeer(Via via, List<Header> headers, long length, String peerUrl, String sha256,
        long downloadId) {
      this(via, headers, length, peerUrl, sha256, downloadId, -1);
    }

    /** The path of the bytes on the peer's endpoint. */
    public String path() {
      return downloadId >= 0 ? PeerBlobs.downloadPath(downloadId) : PeerBlobs.blobPath(sha256);
    }
  }

  /** The upstream said the artifact does not exist: 404, or 410 when {@code gone}. */
  record NotFound(Via via, boolean gone, List<Header> headers) implements Reply {}

  /** The fetch failed, or the waiter was refused ({@link Failure#TOO_MANY_WAITERS}). */
  record Failed(Failure cause, String reason) implements Reply {}

  /** The entity stopped before the outcome was known: ask again (W3), never the upstream. */
  record Retry(String reason) implements Reply {}

  /** A download's outcome as a waiter on this node is told it. */
  static Reply of(Outcome outcome, Via via) {
    if (outcome instanceof Outcome.Body b) {
      return new Body(via, b.headers(), b.bytes());
    }
    if (outcome instanceof Outcome.Stored s) {
      return new Stored(via, s.artifact());
    }
    if (outcome instanceof Outcome.Revalidated r) {
      return new Stored(via, r.artifact());
    }
    if (outcome instanceof Outcome.Streaming s) {
      return new Streaming(via, s.headers(), s.length(), s.downloadId());
    }
    if (outcome instanceof Outcome.NotFound nf) {
      return new NotFound(via, nf.gone(), nf.headers());
    }
    if (outcome instanceof Outcome.Failed f) {
      return new Failed(f.cause(), f.reason());
    }
    return new Retry(((Outcome.Unavailable) outcome).reason());
  }
}
