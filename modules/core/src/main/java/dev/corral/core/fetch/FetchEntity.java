package dev.corral.core.fetch;

import dev.corral.core.download.Download;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.download.PeerBlobs;
import dev.corral.core.record.Record;
import dev.corral.core.record.KeyRecords;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.ByteStringModule;
import dev.corral.core.CborSerializable;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.AbstractBehavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.javadsl.Receive;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one Cluster Sharding entity per artifact key: the single place, cluster-wide, where "who
 * fetches" is decided (SEMANTICS F1).
 *
 * <p>A {@link Join} either finds the key's bytes already in the store (F2), joins the fetch in
 * flight, or starts it. Waiters stay here until the fetch's outcome is known and are then all
 * answered at once by message (W1, W2). The entity keeps no in-flight state after a fetch ends
 * (F4) and, when idle, passivates itself; it never passivates mid-fetch (L1). When it stops for
 * any reason, every remaining waiter is told to ask again (L2).
 *
 * <p>For mutable metadata ({@link Join#mutable()}) a stored copy past the repository's metadata
 * TTL is revalidated by one conditional fetch; meanwhile a copy within max-stale is answered at
 * once ({@link Stale}), and it is still served, saying so, when the upstream fails. See
 * docs/architecture.md, "Freshness of mutable metadata".
 *
 * <p>The persisted record (durable state: what is cached for the key, not a history of fetches)
 * is the truth about the key; the node's store is the truth about the node's bytes (L3). The
 * entity writes it through {@link KeyRecords} after each fetch and never waits for it: a plain
 * behavior rather than a {@code DurableStateBehavior}, so that a new key's first request does not
 * wait for a database read, and a database outage never holds up an answer.
 */
public final class FetchEntity extends AbstractBehavior<FetchEntity.Command> {

  private static final Logger log = LoggerFactory.getLogger(FetchEntity.class);

  public static final EntityTypeKey<Command> TYPE_KEY = EntityTypeKey.create(Command.class, "Fetch");

  // ---- protocol -------------------------------------------------------------------------------

  public sealed interface Command extends CborSerializable {}

  /**
   * A waiter asks for the key's outcome. {@code token} identifies it for {@link Leave}.
   * {@code mutable}: the key is metadata that changes upstream (a stored copy is served only
   * while fresh, then revalidated); false for immutable artifacts, which are never revalidated.
   */
  public record Join(ArtifactKey key, long token, ActorRef<Reply> replyTo, boolean mutable)
      implements Command {
    /** An immutable artifact's Join. */
    public Join(ArtifactKey key, long token, ActorRef<Reply> replyTo) {
      this(key, token, replyTo, false);
    }
  }

  /** The waiter's client went away: forget its registration (C2). Never disturbs the others (C3). */
  public record Leave(long token) implements Command {}

  /** Forget what is cached for the key (the node removed the bytes from its own store). */
  public record Purge(ActorRef<Done> replyTo) implements Command {}

  /** The node at {@code peerUrl} committed a verified copy of the key's bytes (replica directory). */
  public record Holding(String peerUrl, String sha256) implements Command {}

  /** The node at {@code peerUrl} no longer holds the key's bytes (it evicted them). */
  public record Dropped(String peerUrl) implements Command {}

  /** Sharding's stop message for passivation and hand-off. */
  public enum Stop implements Command { INSTANCE }

  private enum Idle implements Command { INSTANCE }

  private record HeadersKnown(long fetchId, Outcome.Streaming outcome) implements Command {}

  private record Finished(long fetchId, Outcome outcome, long startedNanos) implements Command {}

  private record RecordWritten(long revision, Throwable failure) implements Command {}

  private record RecordRead(long flightId, Record record) implements Command {}

  // ---- sharding -------------------------------------------------------------------------------

  /**
   * Registers the entity with Cluster Sharding.
   *
   * @param idleTimeout how long an entity with no fetch and no waiter lives before passivating
   */
  public static void init(ActorSystem<?> system, Node node, Duration idleTimeout) {
    ClusterSharding.get(system)
        .init(
            Entity.of(TYPE_KEY, ctx -> create(ctx.getEntityId(), node, idleTimeout, ctx.getShard()))
                .withStopMessage(Stop.INSTANCE));
  }

  static Behavior<Command> create(
      String entityId, Node node, Duration idleTimeout,
      ActorRef<ClusterSharding.ShardCommand> shard) {
    return Behaviors.setup(ctx -> {
      ctx.setReceiveTimeout(idleTimeout, Idle.INSTANCE);
      return new FetchEntity(entityId, node, idleTimeout, shard, ctx);
    });
  }

  // ---- the entity -----------------------------------------------------------------------------

  private final Node node;
  private final Duration idleTimeout;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final ActorContext<Command> ctx;
  private final KeyRecords.Writer record;
  private final String persistenceId;

  /** The fetch in flight and its waiters; null when there is none (F4). */
  private Flight flight;
  private long fetchIds;
  /** Passivation was asked for: no new fetch may start in this incarnation. */
  private boolean passivating;
  /** A remembered upstream not-found and its expiry (ticker nanos). */
  private Outcome.NotFound notFound;
  private long notFoundUntil;
  /** The last revalidation failed upstream; stale answers say so until one succeeds. */
  private boolean revalidationFailed;
  /** After a failed revalidation, stale answers start no new one before this (ticker nanos). */
  private long revalidateNotBefore;

  /** How long a miss waits for the replica directory before it asks the upstream instead. */
  static final Duration RECORD_READ_TIMEOUT = Duration.ofSeconds(1);

  /** The longest pause between revalidations after one failed (shorter when the TTL is). */
  static final Duration REVALIDATION_RETRY = Duration.ofSeconds(30);
  /** The leader token of a revalidation whose first request was answered STALE at once. */
  private static final long NO_LEADER = Long.MIN_VALUE;

  private static final class Flight {
    final long id;
    final ArtifactKey key;
    final long leaderToken;
    /** The stored copy this fetch revalidates, or null for a plain fetch. */
    final StoredArtifact revalidating;
    final List<Waiter> waiters = new ArrayList<>();
    Download fetch;
    Outcome.Streaming streaming;
    boolean orphanSlot;
    /** The bytes are copied from a peer holding them: every waiter is answered PEER. */
    boolean fromPeer;

    Flight(long id, ArtifactKey key, long leaderToken, StoredArtifact revalidating) {
      this.id = id;
      this.key = key;
      this.leaderToken = leaderToken;
      this.revalidating = revalidating;
    }
  }

  private record Waiter(long token, ActorRef<Reply> replyTo) {}

  private FetchEntity(String entityId, Node node, Duration idleTimeout,
      ActorRef<ClusterSharding.ShardCommand> shard, ActorContext<Command> ctx) {
    super(ctx);
    this.node = node;
    this.persistenceId = PersistenceId.of(TYPE_KEY.name(), entityId).id();
    this.record = node.records().writer(persistenceId);
    this.idleTimeout = idleTimeout;
    this.shard = shard;
    this.ctx = ctx;
  }

  @Override
  public Receive<Command> createReceive() {
    return newReceiveBuilder()
        .onMessage(Join.class, this::onJoin)
        .onMessage(Leave.class, this::onLeave)
        .onMessage(HeadersKnown.class, this::onHeadersKnown)
        .onMessage(Finished.class, this::onFinished)
        .onMessage(RecordWritten.class, this::onRecordWritten)
        .onMessage(RecordRead.class, this::onRecordRead)
        .onMessage(Holding.class, this::onHolding)
        .onMessage(Dropped.class, this::onDropped)
        .onMessage(Purge.class, this::onPurge)
        .onMessage(Idle.class, this::onIdle)
        .onMessage(Stop.class, stop -> Behaviors.stopped())
        .onSignal(PostStop.class, signal -> {
          onStopped();
          return this;
        })
        .build();
  }

  private Behavior<Command> onJoin(Join join) {
    if (passivating) {
      // The shard is stopping this entity: a fetch started now would be aborted by the stop.
      // Asked again, the shard holds the Join for the next incarnation.
      return reply(join.replyTo(), new Reply.Retry("the fetch entity is passivating"));
    }
    if (notFound != null && node.ticker().read() - notFoundUntil < 0) {
      return reply(join.replyTo(), Reply.of(notFound, Via.NEGATIVE));
    }
    notFound = null;
    if (flight != null) {
      if (flight.revalidating != null && join.mutable()) {
        // Stale-while-revalidate: the one revalidation runs; a young enough copy is served now.
        Optional<StoredArtifact> stale = node.store().lookup(join.key())
            .filter(s -> node.policy(join.key().repo()).mayServeStale(s, node.clock().millis()));
        if (stale.isPresent()) {
          sendStale(join.replyTo(), stale.get());
          return this;
        }
      }
      if (flight.streaming != null) {
        send(join.replyTo(), flight.streaming, flight.fromPeer ? Via.PEER : Via.COALESCED);
        return this;
      }
      if (flight.waiters.size() >= node.policy(join.key().repo()).maxWaiters()) {
        return reply(join.replyTo(), new Reply.Failed(Failure.TOO_MANY_WAITERS, "too many requests waiting for this artifact"));
      }
      // A waiter that asks again (its earlier ask went unanswered) replaces its registration.
      flight.waiters.removeIf(w -> w.token() == join.token());
      flight.waiters.add(new Waiter(join.token(), join.replyTo()));
      return this;
    }
    // F2: another path may have committed the bytes in the gap; a record whose bytes are
    // missing or corrupt is not found by lookup, so it is fetched again.
    Optional<StoredArtifact> stored = node.store().lookup(join.key());
    if (stored.isPresent()) {
      FetchPolicy policy = node.policy(join.key().repo());
      if (!join.mutable() || policy.isFresh(stored.get(), node.clock().millis())) {
        send(join.replyTo(), new Outcome.Stored(stored.get()), Via.HIT);
        return this;
      }
      return revalidate(join, stored.get(), policy);
    }
    startFetch(join.key(), join, null);
    return this;
  }

  /**
   * A stale copy of mutable metadata: one conditional fetch (the flight); a copy within
   * max-stale is answered at once (STALE), an older one makes its request wait for the outcome.
   */
  private Behavior<Command> revalidate(Join join, StoredArtifact stored, FetchPolicy policy) {
    if (!policy.mayServeStale(stored, node.clock().millis())) {
      startFetch(join.key(), join, stored);
      return this;
    }
    sendStale(join.replyTo(), stored);
    if (!revalidationFailed || node.ticker().read() - revalidateNotBefore >= 0) {
      startFetch(join.key(), null, stored);
    }
    return this;
  }

  /**
   * @param leader the Join that waits for this fetch and is its MISS, or null (a revalidation
   *     whose request was answered STALE)
   * @param revalidating the stored copy a conditional fetch revalidates, or null
   */
  private void startFetch(ArtifactKey key, Join leader, StoredArtifact revalidating) {
    long id = ++fetchIds;
    Flight f = new Flight(id, key, leader == null ? NO_LEADER : leader.token(), revalidating);
    if (leader != null) {
      f.waiters.add(new Waiter(leader.token(), leader.replyTo()));
    }
    flight = f;
    ctx.cancelReceiveTimeout(); // L1: never passivate for idleness mid-fetch
    String repo = key.repo();
    node.metrics().inflightFetches.labelValues(repo).inc();
    // Peers give immutable bytes only: a revalidation asks the upstream, and a peer's copy of
    // mutable metadata may be older than the TTL allows (it would be stored here as fresh).
    boolean immutable = revalidating == null && (leader == null || !leader.mutable());
    if (immutable && peersMayHold()) {
      // Replica directory: read only on this node's miss, never on a hit. Joins meanwhile wait
      // in the flight like any coalesced waiter.
      ActorRef<Command> self = ctx.getSelf();
      // Bounded: a database that hangs must not hold up a miss (the upstream is asked instead).
      node.records().read(persistenceId).toCompletableFuture()
          .orTimeout(RECORD_READ_TIMEOUT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
          .whenComplete((got, error) -> {
            if (error != null) {
              log.warn("could not read the record of {}; fetching from the upstream: {}", key, error.toString());
            }
            Record r = got == null ? Record.EMPTY : got.value().orElse(Record.EMPTY);
            self.tell(new RecordRead(id, r));
          });
      return;
    }
    run(f, Download.Origin.UPSTREAM);
  }

  /** True when other nodes may hold the key's bytes: this node talks to peers and is not alone. */
  private boolean peersMayHold() {
    return node.peering() != null
        && Cluster.get(ctx.getSystem()).state().members().size() > 1;
  }

  private Behavior<Command> onRecordRead(RecordRead read) {
    if (flight == null || flight.id != read.flightId() || flight.fetch != null) {
      return this;
    }
    Record r = read.record();
    String self = node.peering().selfUrl();
    List<String> peers = r.cached() == null ? List.of()
        : r.holders().stream().filter(h -> !h.equals(self)).toList();
    if (peers.isEmpty()) {
      run(flight, Download.Origin.UPSTREAM);
    } else {
      flight.fromPeer = true;
      StoredArtifact a = r.cached();
      run(flight, new Download.Origin(node.peering().client(), peers, PeerBlobs.blobPath(a.sha256()), a.sha256(), a.headers(), true,
          a.fetchedAtMillis()));
    }
    return this;
  }

  private void run(Flight f, Download.Origin origin) {
    long started = node.ticker().read();
    long id = f.id;
    ActorRef<Command> self = ctx.getSelf();
    f.fetch = node.downloads().start(f.key, node.policy(f.key.repo()).inlineLimit(), f.revalidating,
        ctx.getSystem(), origin,
        streaming -> self.tell(new HeadersKnown(id, streaming)),
        outcome -> self.tell(new Finished(id, outcome, started)));
  }

  private Behavior<Command> onHeadersKnown(HeadersKnown msg) {
    if (flight == null || flight.id != msg.fetchId()) {
      return this;
    }
    flight.streaming = msg.outcome();
    for (Waiter w : remoteFirst(flight.waiters)) {
      send(w.replyTo(), msg.outcome(), via(w));
    }
    flight.waiters.clear();
    return this;
  }

  private Behavior<Command> onFinished(Finished msg) {
    if (flight == null || flight.id != msg.fetchId()) {
      return this;
    }
    Flight done = flight;
    flight = null; // F4: no in-flight state survives the fetch
    String repo = done.key.repo();
    node.metrics().inflightFetches.labelValues(repo).dec();
    node.metrics().upstreamFetchSeconds.labelValues(repo)
        .observe((node.ticker().read() - msg.startedNanos()) / 1e9);
    if (done.orphanSlot) {
      node.releaseOrphanSlot(repo);
    }
    ctx.setReceiveTimeout(idleTimeout, Idle.INSTANCE);
    Outcome outcome = msg.outcome();
    if (outcome instanceof Outcome.NotFound nf) {
      notFound = nf;
      notFoundUntil = node.ticker().read() + node.policy(repo).negativeTtl().toNanos();
    }
    if (done.revalidating != null) {
      // Stale-if-error: the last good copy stays and is served (saying so) until one succeeds;
      // stale answers start the next revalidation no sooner than a short pause.
      revalidationFailed = outcome instanceof Outcome.Failed;
      if (revalidationFailed) {
        Duration ttl = node.policy(repo).metadataTtl();
        Duration pause = ttl.compareTo(REVALIDATION_RETRY) < 0 ? ttl : REVALIDATION_RETRY;
        revalidateNotBefore = node.ticker().read() + pause.toNanos();
      }
    }
    StoredArtifact committed = null;
    if (outcome instanceof Outcome.Body b) {
      committed = b.artifact();
    } else if (outcome instanceof Outcome.Stored s) {
      committed = s.artifact();
    } else if (outcome instanceof Outcome.Revalidated r) {
      committed = r.artifact();
    }
    // Waiters are answered first: the bytes are already committed to this node's store (F3), so
    // a failing database write (which stops the entity) can never strand them (W4).
    answer(done, outcome);
    if (committed == null) {
      if (done.revalidating != null && outcome instanceof Outcome.NotFound) {
        record.write(Record.EMPTY, ctx.getSelf(), RecordWritten::new); // gone upstream
      }
      return this;
    }
    StoredArtifact here = committed;
    String self = node.peering() == null ? null : node.peering().selfUrl();
    record.update(r -> r.committed(here, self), ctx.getSelf(), RecordWritten::new);
    return this;
  }

  private void answer(Flight done, Outcome outcome) {
    for (Waiter w : remoteFirst(done.waiters)) {
      send(w.replyTo(), outcome, outcome instanceof Outcome.Revalidated ? Via.REVALIDATED : via(done, w));
    }
  }

  /**
   * Waiters on other nodes first: their replies still cross the network and are answered by
   * their own node, so they get a head start over this node's, which are answered at once.
   */
  private static List<Waiter> remoteFirst(List<Waiter> waiters) {
    if (waiters.size() < 2) {
      return waiters;
    }
    List<Waiter> ordered = new ArrayList<>(waiters.size());
    for (Waiter w : waiters) {
      if (!w.replyTo().path().address().hasLocalScope()) {
        ordered.add(w);
      }
    }
    for (Waiter w : waiters) {
      if (w.replyTo().path().address().hasLocalScope()) {
        ordered.add(w);
      }
    }
    return ordered;
  }

  private Via via(Waiter w) {
    return via(flight, w);
  }

  private static Via via(Flight f, Waiter w) {
    if (f.fromPeer) {
      return Via.PEER;
    }
    return w.token() == f.leaderToken ? Via.MISS : Via.COALESCED;
  }

  /**
   * Answers a waiter. One on another node cannot read this node's store or downloads: it gets
   * the small body inside the reply, or where to read the bytes from this node's peer endpoint.
   */
  private void send(ActorRef<Reply> to, Outcome outcome, Via via) {
    Node.Peering peering = node.peering();
    if (to.path().address().hasLocalScope()) {
      to.tell(Reply.of(outcome, via));
      return;
    }
    if (peering == null) {
      // A node still starting (its HTTP side not bound yet) cannot hand bytes to other nodes;
      // a local-only reply would point the waiter at its own store or downloads.
      to.tell(new Reply.Retry("this node cannot serve other nodes yet"));
      return;
    }
    Via remoteVia = via == Via.HIT ? Via.PEER : via; // bytes held by another node
    String self = peering.selfUrl();
    if (outcome instanceof Outcome.Body b) {
      StoredArtifact a = b.artifact();
      to.tell(b.bytes().size() <= peering.inlineLimit()
          ? new Reply.Inline(remoteVia, b.headers(), b.bytes(), a.sha256(), a.fetchedAtMillis())
          : new Reply.FromPeer(remoteVia, b.headers(), a.size(), self, a.sha256(), -1, a.fetchedAtMillis()));
    } else if (outcome instanceof Outcome.Stored s) {
      StoredArtifact a = s.artifact();
      to.tell(new Reply.FromPeer(remoteVia, a.headers(), a.size(), self, a.sha256(), -1, a.fetchedAtMillis()));
    } else if (outcome instanceof Outcome.Revalidated r) {
      StoredArtifact a = r.artifact();
      to.tell(new Reply.FromPeer(remoteVia, a.headers(), a.size(), self, a.sha256(), -1, a.fetchedAtMillis()));
    } else if (outcome instanceof Outcome.Streaming s) {
      to.tell(new Reply.FromPeer(remoteVia, s.headers(), s.length(), self, null, s.downloadId()));
    } else {
      to.tell(Reply.of(outcome, via));
    }
  }

  /**
   * A stale copy for a waiter: one on this node serves it from the store; one on another node
   * copies it from this node's peer endpoint (X-Cache: STALE either way).
   */
  private void sendStale(ActorRef<Reply> to, StoredArtifact stored) {
    if (to.path().address().hasLocalScope()) {
      to.tell(new Reply.Stale(stored, revalidationFailed));
    } else {
      send(to, new Outcome.Stored(stored), Via.STALE);
    }
  }

  private Behavior<Command> onHolding(Holding holding) {
    record.update(r -> r.holding(holding.peerUrl(), holding.sha256()), ctx.getSelf(), RecordWritten::new);
    return this;
  }

  private Behavior<Command> onDropped(Dropped dropped) {
    record.update(r -> r.dropped(dropped.peerUrl()), ctx.getSelf(), RecordWritten::new);
    return this;
  }

  private Behavior<Command> onLeave(Leave leave) {
    if (flight == null) {
      return this;
    }
    boolean removed = flight.waiters.removeIf(w -> w.token() == leave.token());
    if (removed && flight.waiters.isEmpty() && flight.fetch == null) {
      // Nobody waits and the record is still being read: nothing has started yet.
      Flight dropped = flight;
      flight = null;
      node.metrics().inflightFetches.labelValues(dropped.key.repo()).dec();
      ctx.setReceiveTimeout(idleTimeout, Idle.INSTANCE);
      return this;
    }
    if (removed && flight.waiters.isEmpty() && flight.streaming == null && !flight.orphanSlot) {
      // C3: the fetch goes on to warm the cache, as long as the repository has a slot for it.
      if (node.tryTakeOrphanSlot(flight.key.repo())) {
        flight.orphanSlot = true;
      } else {
        // Nobody waits and no slot is free: the fetch is aborted and forgotten at once, so that
        // a request arriving meanwhile starts a fresh fetch instead of joining a dead one.
        Flight aborted = flight;
        flight = null;
        aborted.fetch.abort("every waiter left and the repository's orphan fetch slots are full");
        node.metrics().inflightFetches.labelValues(aborted.key.repo()).dec();
        ctx.setReceiveTimeout(idleTimeout, Idle.INSTANCE);
      }
    }
    return this;
  }

  private Behavior<Command> onPurge(Purge purge) {
    notFound = null;
    revalidationFailed = false;
    record.write(Record.EMPTY, ctx.getSelf(), RecordWritten::new);
    purge.replyTo().tell(Done.getInstance());
    return this;
  }

  private Behavior<Command> onIdle(Idle idle) {
    if (flight == null && !record.writing()) {
      passivating = true;
      shard.tell(new ClusterSharding.Passivate<>(ctx.getSelf()));
    }
    return this;
  }

  private Behavior<Command> onRecordWritten(RecordWritten written) {
    record.written(written.revision(), written.failure(), ctx.getSelf(), RecordWritten::new);
    return this;
  }

  private <T> Behavior<Command> reply(ActorRef<T> to, T message) {
    to.tell(message);
    return this;
  }

  /** L2: however the entity stops, nobody is left waiting. */
  private void onStopped() {
    if (flight == null) {
      return;
    }
    Flight f = flight;
    flight = null;
    if (f.fetch != null) { // null when the entity failed while starting it
      f.fetch.abort("the entity stopped");
    }
    node.metrics().inflightFetches.labelValues(f.key.repo()).dec();
    if (f.orphanSlot) {
      node.releaseOrphanSlot(f.key.repo());
    }
    for (Waiter w : f.waiters) {
      w.replyTo().tell(new Reply.Retry("the fetch entity stopped"));
    }
  }
}
