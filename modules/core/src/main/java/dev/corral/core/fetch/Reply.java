package dev.corral.core.fetch;

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
  /**
   * Put by this node in a relayed STALE answer's headers ({@link Body}, {@link Streaming}) when
   * the entity's last revalidation failed: the node that serves it adds {@code Warning: 111}.
   * Recognised by identity ({@link #saysRevalidationFailed}), so no upstream header can pass for
   * it; never stored.
   */
  Header REVALIDATION_FAILED = new Header("Warning", "111 - \"Revalidation Failed\"");

  /** Whether {@code headers} carry this node's {@link #REVALIDATION_FAILED} mark. */
  static boolean saysRevalidationFailed(List<Header> headers) {
    for (Header h : headers) {
      if (h == REVALIDATION_FAILED) {
        return true;
      }
    }
    return false;
  }

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
   * For a waiter on another node, which cannot read this node's store or downloads: made by
   * {@link Peers#forAnotherNode} and turned back into a local reply by {@link Peers#arrived} (the
   * cluster module's wire format: a small body inside, or where to copy the bytes from).
   */
  non-sealed interface ForAnotherNode extends Reply {}

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
    if (outcome instanceof Outcome.PassedThrough) {
      // Its waiters were all answered Streaming when its headers came; one still unanswered asks
      // again, and the next fetch answers it (nothing was stored to serve).
      return new Retry("the body was not stored (the upstream said no-store): ask again");
    }
    return new Retry(((Outcome.Unavailable) outcome).reason());
  }
}
