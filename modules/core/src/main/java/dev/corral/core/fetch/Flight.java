package dev.corral.core.fetch;

import dev.corral.core.download.Download;
import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.StoredArtifact;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * One fetch in flight for a key and the waiters on it: groupcache's {@code call}, owned by the
 * key's {@link FetchEntity} and touched only from its thread. Plain Java, so the rules of
 * SEMANTICS F1, W1, W2 and C2 are tested here without an actor.
 *
 * <ul>
 *   <li>The first waiter is the leader: its answer says {@link Via#MISS}, every other one's
 *       {@link Via#COALESCED}; when the bytes are copied from another node, every answer says
 *       {@link Via#PEER}.
 *   <li>A waiter that asks again (its earlier ask went unanswered) replaces its registration; a
 *       waiter past the key's maximum is refused (F4).
 *   <li>Once a large body's headers are known ({@link #headersKnown}) every waiter is answered at
 *       once and later ones are answered with the same stream.
 *   <li>Waiters on other nodes are answered first ({@link #answers}): their replies still cross
 *       the network, and this node's are answered at once.
 *   <li>A copy from holders that fails by their fault is followed by another download in the same
 *       flight ({@link #fellThrough}): the waiters still registered wait for it.
 * </ul>
 *
 * @param <W> where a waiter's reply goes (the entity uses an actor ref)
 */
final class Flight<W> {
  /** A registered waiter. */
  record Waiter<W>(long token, W replyTo) {}

  /** A waiter (its token) and what its answer says of the fetch. */
  record Answer<W>(long token, W replyTo, Via via) {}

  /** What became of a waiter that joined. */
  enum Joined { WAITING, STREAMING, FULL }

  /** The leader token of a revalidation whose first request was answered STALE at once. */
  static final long NO_LEADER = Long.MIN_VALUE;

  final long id;
  final ArtifactKey key;
  /** The stored copy this fetch revalidates, or null for a plain fetch. */
  final StoredArtifact revalidating;
  /** The key's lifetime, as the Join that started this flight said. */
  dev.corral.core.upstream.Lifetime lifetime = dev.corral.core.upstream.Lifetime.IMMUTABLE;
  private final long leader;
  private final int maxWaiters;
  private final Predicate<W> local;
  private final List<Waiter<W>> waiters = new ArrayList<>();
  private final Set<Long> answered = new HashSet<>();
  private Download download;
  private Outcome.Streaming streaming;
  private boolean fromPeer;
  /** The fetch holds one of the repository's slots for fetches nobody waits for (C3). */
  boolean orphanSlot;
  /** The holders' copy the running download reads, or null when it reads the upstream. */
  private Peers.HolderCopy copy;
  /** The holders not asked yet by any copy of this flight (a copy that fails goes on to them). */
  private List<String> untried = List.of();
  /** What the key's record says the holders hold (kept for the next copy after a failed one). */
  private StoredArtifact recorded;

  /**
   * @param leader the token of the waiter whose request is the fetch's MISS, or {@link #NO_LEADER}
   * @param local whether a waiter is on this node (others are answered first)
   */
  Flight(long id, ArtifactKey key, long leader, StoredArtifact revalidating, int maxWaiters, Predicate<W> local) {
    this.id = id;
    this.key = key;
    this.leader = leader;
    this.revalidating = revalidating;
    this.maxWaiters = maxWaiters;
    this.local = local;
  }

  /** Registers a waiter; {@link Joined#STREAMING}: answer it with {@link #streaming()} now. */
  Joined join(long token, W replyTo) {
    if (streaming != null) {
      answered.add(token);
      return Joined.STREAMING;
    }
    waiters.removeIf(w -> w.token() == token);
    if (waiters.size() >= maxWaiters) {
      return Joined.FULL;
    }
    waiters.add(new Waiter<>(token, replyTo));
    return Joined.WAITING;
  }

  /** Forgets a waiter (C2); true when it was the last one. The others are not disturbed (C3). */
  boolean leave(long token) {
    return waiters.removeIf(w -> w.token() == token) && waiters.isEmpty();
  }

  /** The download started (false while the replica directory is still being read). */
  boolean started() {
    return download != null;
  }

  Download download() {
    return download;
  }

  void started(Download value, boolean copiedFromPeer) {
    this.download = value;
    this.fromPeer = copiedFromPeer;
  }

  /** The download about to start copies {@code recorded} from {@code holders} through {@code value}. */
  void copying(Peers.HolderCopy value, List<String> holders, StoredArtifact recorded) {
    this.copy = value;
    this.untried = List.copyOf(holders);
    this.recorded = recorded;
  }

  /** What the key's record says the holders hold, once a copy was started. */
  StoredArtifact recorded() {
    return recorded;
  }

  /** The holders' copy the running download reads, or null. */
  Peers.HolderCopy copy() {
    return copy;
  }

  /**
   * The running copy failed by its holders' fault: the flight goes on with another download (the
   * waiters still registered wait for it; those answered with the failed stream are gone).
   * Returns the holders that copy did not ask.
   */
  List<String> fellThrough() {
    List<String> asked = copy.asked();
    // A copy that names none asked is taken to have asked them all: never the same holders twice.
    List<String> rest = asked.isEmpty() ? List.of() : untried.stream().filter(h -> !asked.contains(h)).toList();
    copy = null;
    untried = List.of();
    download = null;
    streaming = null;
    fromPeer = false;
    return rest;
  }

  /** The large body streams: every waiter so far is answered with it; later ones join it. */
  List<Answer<W>> headersKnown(Outcome.Streaming value) {
    streaming = value;
    return answers();
  }

  Outcome.Streaming streaming() {
    return streaming;
  }

  /** Whether no waiter is registered (all were answered, or all left). */
  boolean unwatched() {
    return waiters.isEmpty();
  }

  /** How a waiter's answer describes the fetch. */
  Via via(long token) {
    if (fromPeer) {
      return Via.PEER;
    }
    return token == leader ? Via.MISS : Via.COALESCED;
  }

  /** The tokens of the waiters answered so far (see {@link FetchEntity.AskBegun}). */
  Set<Long> answered() {
    return answered;
  }

  /** Every registered waiter with its Via, those on other nodes first; the flight keeps none. */
  List<Answer<W>> answers() {
    List<Answer<W>> out = new ArrayList<>(waiters.size());
    for (Waiter<W> w : waiters) {
      answered.add(w.token());
    }
    for (Waiter<W> w : waiters) {
      if (!local.test(w.replyTo())) {
        out.add(new Answer<>(w.token(), w.replyTo(), via(w.token())));
      }
    }
    for (Waiter<W> w : waiters) {
      if (local.test(w.replyTo())) {
        out.add(new Answer<>(w.token(), w.replyTo(), via(w.token())));
      }
    }
    waiters.clear();
    return out;
  }
}
