package dev.corral.cluster;

import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import dev.corral.core.ByteStringModule;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.fetch.Peers;
import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.util.List;
import java.util.function.BiFunction;
import org.apache.pekko.util.ByteString;

/**
 * The wire format of a fetch entity's answer to a waiter on another node, encoded on the entity's
 * node and decoded on the waiter's, in one place. A waiter elsewhere cannot read this node's store
 * or downloads, so it gets either the small body inside the reply ({@link Inline}) or where to
 * read the bytes from ({@link FromPeer}: this node's {@link PeerEndpoint}). Both are Jackson CBOR
 * messages, like every other message between nodes.
 */
final class CrossNodeReplies {
  private CrossNodeReplies() {}

  /**
   * A small verified body inside the reply. Bounded by the inline limit so that it always fits
   * Artery's large-message frame (a larger message would be dropped with only a log line). The
   * waiter's node checks the SHA-256, answers its clients and keeps a replica, as old as the
   * holder's copy ({@code fetchedAtMillis}; -1: fetched just now), so a copy of mutable metadata
   * never looks fresher than its source.
   */
  record Inline(Via via, List<Header> headers,
      @JsonSerialize(using = ByteStringModule.Writer.class) @JsonDeserialize(using = ByteStringModule.Reader.class)
      ByteString bytes, String sha256, long fetchedAtMillis) implements Reply.ForAnotherNode {}

  /**
   * Read the body from the node at {@code peerUrl}, which holds it committed ({@code downloadId <
   * 0}; {@code sha256} names the blob) or is still downloading it (download {@code downloadId};
   * {@code sha256} is null). The waiter's node copies it once, streams the copy to its clients and
   * keeps a verified replica, as old as the holder's copy ({@code fetchedAtMillis}; -1: fetched
   * just now). {@code revalidationFailed}: a STALE copy whose last revalidation failed (the
   * waiter's node answers with {@code Warning: 111}). {@code alsoAt}: other nodes the entity knows
   * to hold the same committed blob; a copy that breaks and cannot be resumed at {@code peerUrl}
   * resumes from them (issue 13 item 4). Null from a node of an earlier build: none.
   */
  record FromPeer(Via via, List<Header> headers, long length, String peerUrl, String sha256,
      long downloadId, long fetchedAtMillis, boolean revalidationFailed, List<String> alsoAt)
      implements Reply.ForAnotherNode {

    FromPeer {
      alsoAt = alsoAt == null || sha256 == null ? List.of() : List.copyOf(alsoAt);
    }

    /** Where the bytes may be read, in the order to ask: the entity's node first. */
    List<String> holders() {
      List<String> all = new java.util.ArrayList<>();
      all.add(peerUrl);
      alsoAt.stream().filter(h -> !all.contains(h)).forEach(all::add);
      return List.copyOf(all);
    }

    /** The path of the bytes on the peer's endpoint. */
    String path() {
      return downloadId >= 0 ? PeerEndpoint.downloadPath(downloadId) : PeerEndpoint.blobPath(sha256);
    }
  }

  /**
   * On the entity's node: what a waiter on another node is told. A hit there is {@code PEER}
   * (bytes held by another node).
   *
   * @param self this node's peer base URL
   * @param alsoAt other nodes known to hold the same committed bytes
   */
  static Reply encode(Outcome outcome, Via via, String self, long inlineLimit, List<String> alsoAt) {
    Via remote = via == Via.HIT ? Via.PEER : via;
    if (outcome instanceof Outcome.Body b) {
      StoredArtifact a = b.artifact();
      if (a == null) {
        // Not stored (the upstream said no-store): no blob to copy; the bytes travel inside, and
        // the headers' NOT_STORED mark keeps the other node from keeping a replica.
        return new Inline(remote, b.headers(), b.bytes(), Sha256.hex(b.bytes()), -1);
      }
      return b.bytes().size() <= inlineLimit
          ? new Inline(remote, b.headers(), b.bytes(), a.sha256(), a.fetchedAtMillis())
          : new FromPeer(remote, b.headers(), a.size(), self, a.sha256(), -1, a.fetchedAtMillis(), false, alsoAt);
    }
    StoredArtifact committed = outcome instanceof Outcome.Stored s ? s.artifact()
        : outcome instanceof Outcome.Revalidated r ? r.artifact() : null;
    if (committed != null) {
      return new FromPeer(remote, committed.headers(), committed.size(), self, committed.sha256(), -1,
          committed.fetchedAtMillis(), false, alsoAt);
    }
    if (outcome instanceof Outcome.Streaming s) {
      return new FromPeer(remote, s.headers(), s.length(), self, null, s.downloadId(), -1, false, List.of());
    }
    return Reply.of(outcome, via); // no bytes to carry: not found, failed, ask again
  }

  /** On the entity's node: a stale committed copy for a waiter on another node (always read from here). */
  static Reply stale(StoredArtifact stored, String self, boolean revalidationFailed, List<String> alsoAt) {
    return new FromPeer(Via.STALE, stored.headers(), stored.size(), self, stored.sha256(), -1,
        stored.fetchedAtMillis(), revalidationFailed, alsoAt);
  }

  /**
   * On the waiter's node: an inline body is checked against its SHA-256; a pointer becomes a
   * copy from that node, or from the other holders named when it breaks ({@code copyFrom} makes
   * its source from the holders, in order, and the path).
   */
  static Peers.Arrival decode(Reply.ForAnotherNode reply, BiFunction<List<String>, String, PeerCopy> copyFrom) {
    if (reply instanceof Inline in) {
      String actual = Sha256.hex(in.bytes());
      if (!actual.equals(in.sha256())) {
        return new Peers.Arrival.Refused(new Reply.Failed(Failure.BAD_BYTES,
            "a peer's copy hashes to " + actual + ", not " + in.sha256()));
      }
      return new Peers.Arrival.Body(new Reply.Body(in.via(), in.headers(), in.bytes()), in.sha256(), in.fetchedAtMillis());
    }
    if (reply instanceof FromPeer from) {
      return new Peers.Arrival.Copy(from.via(), copyFrom.apply(from.holders(), from.path()), from.sha256(),
          from.headers(), from.sha256() == null ? -1 : from.fetchedAtMillis(), from.revalidationFailed());
    }
    return new Peers.Arrival.Refused(new Reply.Failed(Failure.PEER_ERROR,
        "an unknown reply from another node: " + reply.getClass().getName()));
  }
}
