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
   * 0}; {@code sha256} names the blob) or is still receiving it (download {@code downloadId}; the
   * entity's own download, or, with fan-out, another node's copy still arriving; {@code sha256} is
   * null while the entity's fetch runs, and names the committed bytes once it has). The waiter's
   * node copies it once, streams the copy to its clients and keeps a verified replica, as old as
   * the holder's copy ({@code fetchedAtMillis}; -1: fetched just now). {@code revalidationFailed}:
   * a STALE copy whose last revalidation failed (the waiter's node answers with {@code Warning:
   * 111}). {@code alsoAt}: other nodes to resume from when the copy breaks and cannot be resumed
   * at {@code peerUrl} (issue 13 item 4); {@code alsoAtPaths} (issue 17, null from a node of an
   * earlier build) the path to read at each, parallel to {@code alsoAt}: without it every other
   * node is a holder of the committed blob, and a pointer to a running download has none.
   */
  record FromPeer(Via via, List<Header> headers, long length, String peerUrl, String sha256,
      long downloadId, long fetchedAtMillis, boolean revalidationFailed, List<String> alsoAt,
      List<String> alsoAtPaths)
      implements Reply.ForAnotherNode {

    FromPeer {
      if (alsoAt != null && alsoAtPaths != null && alsoAt.size() == alsoAtPaths.size()) {
        alsoAt = List.copyOf(alsoAt);
        alsoAtPaths = List.copyOf(alsoAtPaths);
      } else {
        alsoAt = alsoAt == null || sha256 == null ? List.of() : List.copyOf(alsoAt);
        alsoAtPaths = null;
      }
    }

    /** A pointer as a node of an earlier build makes it: other nodes hold the committed blob. */
    FromPeer(Via via, List<Header> headers, long length, String peerUrl, String sha256,
        long downloadId, long fetchedAtMillis, boolean revalidationFailed, List<String> alsoAt) {
      this(via, headers, length, peerUrl, sha256, downloadId, fetchedAtMillis, revalidationFailed, alsoAt, null);
    }

    /** Where the bytes may be read, in the order to ask: the source named first, each node once. */
    List<PeerCopy.At> sources() {
      List<PeerCopy.At> all = new java.util.ArrayList<>();
      all.add(new PeerCopy.At(peerUrl, path()));
      for (int i = 0; i < alsoAt.size(); i++) {
        String url = alsoAt.get(i);
        if (all.stream().noneMatch(a -> a.peerUrl().equals(url))) {
          all.add(new PeerCopy.At(url, alsoAtPaths == null ? path() : alsoAtPaths.get(i)));
        }
      }
      return List.copyOf(all);
    }

    /** Where the bytes may be read, in the order to ask: the source named first. */
    List<String> holders() {
      return sources().stream().map(PeerCopy.At::peerUrl).toList();
    }

    /** The path of the bytes on the peer's endpoint. */
    String path() {
      return downloadId >= 0 ? PeerEndpoint.downloadPath(downloadId) : PeerEndpoint.blobPath(sha256);
    }
  }

  /**
   * On the entity's node, with fan-out: the waiter reads {@code outcome}'s bytes (a running
   * download, or committed bytes too large to travel inside) from {@code source}, resuming from
   * {@code alsoAt} when that breaks. Null when the outcome carries no bytes to copy.
   */
  static Reply pointer(Outcome outcome, Via via, Peers.Source source, List<Peers.Source> alsoAt) {
    Via remote = via == Via.HIT ? Via.PEER : via;
    StoredArtifact committed = outcome instanceof Outcome.Body b ? b.artifact()
        : outcome instanceof Outcome.Stored s ? s.artifact()
        : outcome instanceof Outcome.Revalidated r ? r.artifact() : null;
    String sha256 = committed == null ? null : committed.sha256();
    List<String> urls = new java.util.ArrayList<>();
    List<String> paths = new java.util.ArrayList<>();
    for (Peers.Source at : alsoAt) {
      if (at.downloadId() >= 0 || sha256 != null) {
        urls.add(at.peerUrl());
        paths.add(at.downloadId() >= 0 ? PeerEndpoint.downloadPath(at.downloadId()) : PeerEndpoint.blobPath(sha256));
      }
    }
    if (committed != null) {
      return new FromPeer(remote, committed.headers(), committed.size(), source.peerUrl(), sha256,
          source.downloadId(), committed.fetchedAtMillis(), false, urls, paths);
    }
    if (outcome instanceof Outcome.Streaming s && source.downloadId() >= 0) {
      return new FromPeer(remote, s.headers(), s.length(), source.peerUrl(), null, source.downloadId(), -1, false,
          urls, paths);
    }
    return null;
  }

  /** Whether {@link #encode} makes a pointer of {@code outcome} (else its bytes travel inside, or none). */
  static boolean pointsAtBytes(Outcome outcome, long inlineLimit) {
    if (outcome instanceof Outcome.Body b) {
      return b.artifact() != null && b.bytes().size() > inlineLimit;
    }
    return outcome instanceof Outcome.Stored || outcome instanceof Outcome.Revalidated
        || outcome instanceof Outcome.Streaming;
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
   * copy from that node, or from the other nodes named when it breaks ({@code copyFrom} makes
   * its source from the nodes and paths, in order).
   */
  static Peers.Arrival decode(Reply.ForAnotherNode reply, java.util.function.Function<List<PeerCopy.At>, PeerCopy> copyFrom) {
    if (reply instanceof Inline in) {
      String actual = Sha256.hex(in.bytes());
      if (!actual.equals(in.sha256())) {
        return new Peers.Arrival.Refused(new Reply.Failed(Failure.BAD_BYTES,
            "a peer's copy hashes to " + actual + ", not " + in.sha256()));
      }
      return new Peers.Arrival.Body(new Reply.Body(in.via(), in.headers(), in.bytes()), in.sha256(), in.fetchedAtMillis());
    }
    if (reply instanceof FromPeer from) {
      return new Peers.Arrival.Copy(from.via(), copyFrom.apply(from.sources()), from.sha256(),
          from.headers(), from.sha256() == null ? -1 : from.fetchedAtMillis(), from.revalidationFailed());
    }
    return new Peers.Arrival.Refused(new Reply.Failed(Failure.PEER_ERROR,
        "an unknown reply from another node: " + reply.getClass().getName()));
  }

  /** As above, {@code copyFrom} given the nodes and the path at the first of them. */
  static Peers.Arrival decode(Reply.ForAnotherNode reply, BiFunction<List<String>, String, PeerCopy> copyFrom) {
    return decode(reply, (java.util.function.Function<List<PeerCopy.At>, PeerCopy>) at ->
        copyFrom.apply(at.stream().map(PeerCopy.At::peerUrl).toList(), at.get(0).path()));
  }
}
