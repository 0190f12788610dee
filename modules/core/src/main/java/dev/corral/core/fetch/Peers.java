package dev.corral.core.fetch;

import dev.corral.core.download.Outcome;
import dev.corral.core.store.KeyPrefix;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The other nodes of the cluster as the fetch entity and the waiters see them: the replica
 * directory's names and the bytes other nodes hold (SEMANTICS L3: a copy another node holds is
 * copied from it, never fetched from the upstream again). The cluster module implements it;
 * {@link #NONE} is a node on its own, so core builds and runs without the cluster module.
 *
 * <p>Contract:
 * <ul>
 *   <li>{@link #self()} is this node as key records list a holder. Empty until this node can serve
 *       other nodes; meanwhile a waiter on another node is told to ask again, never pointed at
 *       this node's store or downloads.
 *   <li>{@link #forAnotherNode} is called on the entity's node, {@link #arrived} on the waiter's
 *       node with what it made; neither throws, and an arrival whose bytes can be checked is
 *       checked before it is answered.
 *   <li>{@link #copy} reads bytes the holders have committed; the downloader still verifies them
 *       against the SHA-256 before anything is stored. It says which holders it asked
 *       ({@link HolderCopy#asked}), so that a copy that failed by their fault
 *       ({@link HolderCopy#failedBy}) drops them from the key's record and the fetch goes on
 *       without them (issue 13 item 4).
 * </ul>
 */
public interface Peers {

  /** This node's name in the replica directory; empty while it cannot serve other nodes. */
  Optional<String> self();

  /** Whether another node may hold a key's bytes now (false on a node alone). */
  boolean othersMayHold();

  /**
   * A waiter on another node is told {@code outcome}: small bytes inside, or where to read them.
   * {@code alsoHeldBy}: other nodes this node knows to hold the same committed bytes, from which a
   * copy that breaks may resume (issue 13 item 4); empty for a body still downloading.
   */
  Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy);

  /**
   * A waiter on another node is told to serve {@code stored}, a stale copy of mutable metadata
   * ({@code X-Cache: STALE}); {@code revalidationFailed}: the last revalidation failed, so the
   * waiter's node says so ({@code Warning: 111}) as a local answer would.
   */
  default Reply staleForAnotherNode(StoredArtifact stored, boolean revalidationFailed, List<String> alsoHeldBy) {
    return forAnotherNode(new Outcome.Stored(stored), Via.STALE, alsoHeldBy);
  }

  /**
   * A node that can serve a key's bytes to other nodes: its committed blob ({@code downloadId <
   * 0}) or its download {@code downloadId}, still running (issue 17: the entity's own fetch, or
   * another node's copy still arriving).
   */
  record Source(String peerUrl, long downloadId) {}

  /**
   * Whether {@link #forAnotherNode} would point a waiter on another node at bytes to copy (a
   * running download, or committed bytes too large to travel inside the reply); false when the
   * bytes travel inside, or there are none. Only such replies can name another source.
   */
  default boolean pointsAtBytes(Outcome outcome) {
    return false;
  }

  /**
   * As {@link #forAnotherNode}, but the waiter reads the bytes from {@code source} (chosen by the
   * entity, issue 17), resuming from {@code alsoAt} when that breaks. Only called when {@link
   * #pointsAtBytes} is true.
   */
  default Reply fromSource(Outcome outcome, Via via, Source source, List<Source> alsoAt) {
    return forAnotherNode(outcome, via, List.of());
  }

  /** On the waiter's node: what a reply made by {@link #forAnotherNode} means here. */
  Arrival arrived(Reply.ForAnotherNode reply);

  /**
   * The committed blob {@code sha256} as the holders give it, asked in order: an upstream whose
   * every {@code get} answers 200 with the exact length, or fails when no holder gives it.
   */
  HolderCopy copy(List<String> holders, String sha256);

  /**
   * Other nodes' copy of one blob, read as an upstream by one download, which remembers the
   * holders it asked (for the first bytes or to resume a broken transfer).
   */
  interface HolderCopy extends Upstream {
    /** The holders asked so far, each once, in the order they were first asked. */
    List<String> asked();

    /**
     * Whether a download of a holder's copy that ended in {@code outcome} failed by the holders'
     * fault: none gave the bytes, the transfer broke past resuming, or the bytes were short or not
     * the recorded ones. Such a failure is the holders', never the key's: the fetch goes on to
     * other holders, then the upstream.
     */
    static boolean failedBy(Outcome outcome) {
      if (outcome instanceof Outcome.Unavailable) {
        return true;
      }
      if (outcome instanceof Outcome.Failed f) {
        return switch (f.cause()) {
          case BAD_BYTES, UPSTREAM_ERROR, UPSTREAM_TIMEOUT, PEER_ERROR -> true;
          case TOO_MANY_WAITERS, UPSTREAM_BUSY, INTERNAL -> false;
        };
      }
      return false;
    }
  }

  /**
   * Tells {@code holder} to delete its copy of the key {@code keyId} (a cluster-wide purge):
   * completes true when it held one, false when it did not, and fails when it cannot be asked.
   */
  default CompletionStage<Boolean> dropCopy(String holder, String keyId) {
    return CompletableFuture.failedFuture(new IllegalStateException("no other node to ask"));
  }

  /**
   * The other nodes of the cluster as the replica directory names them: every node listed there
   * but this one (empty on a node alone). A node that left is no longer listed; one that is
   * unreachable but not yet removed still is.
   */
  default List<String> others() {
    return List.of();
  }

  /**
   * Tells {@code node} to delete every copy it holds of the keys {@code prefix} matches (a
   * cluster-wide purge by prefix): completes with the ids of the keys it held, and fails when it
   * cannot be asked or does not answer.
   */
  default CompletionStage<List<String>> dropMatching(String node, KeyPrefix prefix) {
    return CompletableFuture.failedFuture(new IllegalStateException("no other node to ask"));
  }

  /**
   * The holders a fetch may copy from: those of {@code holders} not known to have left the
   * cluster (a node downed or gone is no longer offered, SEMANTICS L3). A holder this node has not
   * heard of yet is kept (the copy from it fails over like any other).
   */
  default List<String> live(List<String> holders) {
    return holders;
  }

  /** What a reply from another node asks the waiter's node to do. */
  sealed interface Arrival {
    /**
     * Verified bytes: answer them, then keep a replica as old as the holder's copy
     * ({@code fetchedAtMillis}; -1: fetched just now).
     */
    record Body(Reply.Body reply, String sha256, long fetchedAtMillis) implements Arrival {}

    /**
     * Copy the bytes once from {@code source} into this node's store, local waiters streaming the
     * copy while it grows. {@code sha256} is null for a body the holder is still downloading.
     */
    record Copy(Via via, Upstream source, String sha256, List<Header> headers, long fetchedAtMillis,
        boolean revalidationFailed) implements Arrival {}

    /** The reply cannot be used (its bytes do not match their SHA-256). */
    record Refused(Reply.Failed reply) implements Arrival {}
  }

  /** A node on its own: no other node holds anything, and no waiter is elsewhere. */
  Peers NONE = new Peers() {
    @Override
    public Optional<String> self() {
      return Optional.empty();
    }

    @Override
    public boolean othersMayHold() {
      return false;
    }

    @Override
    public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
      return new Reply.Retry("this node does not serve other nodes");
    }

    @Override
    public Arrival arrived(Reply.ForAnotherNode reply) {
      return new Arrival.Refused(new Reply.Failed(dev.corral.core.download.Failure.PEER_ERROR,
          "this node cannot read from other nodes"));
    }

    @Override
    public HolderCopy copy(List<String> holders, String sha256) {
      throw new IllegalStateException("a node on its own has no holders to copy from");
    }
  };
}
