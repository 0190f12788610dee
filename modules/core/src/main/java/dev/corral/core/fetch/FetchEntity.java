package dev.corral.core.fetch;

import dev.corral.core.CborSerializable;
import dev.corral.core.download.Download;
import dev.corral.core.download.Failure;
import dev.corral.core.download.GrowingBlob;
import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.Record;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Lifetime;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityTypeKey;
import org.apache.pekko.cluster.sharding.typed.javadsl.StartEntity;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one Cluster Sharding entity per artifact key: the single place, cluster-wide, where "who
 * fetches" is decided (SEMANTICS F1). Read it beside docs/SEMANTICS.md.
 *
 * <p>Three states, one handler set each:
 * <ul>
 *   <li>{@link #idle}: no fetch. A {@link Join} is answered from the store (F2: the store is
 *       checked again here, and a record whose bytes are missing or corrupt is fetched again), by
 *       a remembered not-found, or starts a fetch.
 *   <li>{@link #inFlight}: one {@link Flight} with its waiters; they are all answered by message
 *       when the outcome is known (W1, W2), and the entity is back to idle with no in-flight state
 *       (F4). It never passivates for idleness mid-fetch (L1).
 *   <li>{@link #passivating}: the shard is stopping it; Joins are told to ask again.
 * </ul>
 * However it stops, every remaining waiter is told to ask again (L2).
 *
 * <p>A stored copy past its lifetime ({@link Join#lifetime()}: the repository's metadata TTL for
 * metadata, a generic repository's rule or the upstream's Cache-Control) is revalidated by one
 * conditional fetch; meanwhile a copy within max-stale is answered at once ({@link Reply.Stale})
 * unless the upstream said must-revalidate, and it is still served, saying so, when the upstream
 * fails ({@link Freshness}). See docs/architecture.md, "Freshness of mutable metadata".
 *
 * <p>The persisted record (durable state: what is cached for the key and which nodes hold it) is
 * the truth about the key; the node's store is the truth about the node's bytes (L3). The entity
 * writes it through {@link KeyRecords} after each fetch and never waits for it: a plain behavior
 * rather than a {@code DurableStateBehavior}, so that a new key's first request does not wait
 * for a database read, and a database outage never holds up an answer.
 */
public final class FetchEntity {

  private static final Logger log = LoggerFactory.getLogger(FetchEntity.class);

  public static final EntityTypeKey<Command> TYPE_KEY = EntityTypeKey.create(Command.class, "Fetch");

  // ---- protocol -------------------------------------------------------------------------------

  public sealed interface Command extends CborSerializable {}

  /**
   * The messages every state handles alike: the key's record and its replica directory (see
   * {@link #onRecord}). One handler for all of them, so an entity, which may idle for minutes, does
   * not hold a handler object for each.
   */
  sealed interface RecordCommand extends Command {}

  /**
   * A waiter asks for the key's outcome. {@code token} identifies it for {@link Leave}.
   * {@code lifetime}: how long a stored copy is fresh before it is revalidated ({@link Lifetime};
   * immutable artifacts never are). {@code mutable} is what older nodes read and send instead:
   * true for metadata with the repository's TTL; a Join without a lifetime takes it from there.
   * {@code from}: the asking node's peer URL (issue 17: a node is never pointed at itself, and its
   * {@link Copying} is matched to its Join); null from a node of an earlier build, which is then
   * pointed at the entity's node, as before fan-out.
   */
  public record Join(ArtifactKey key, long token, ActorRef<Reply> replyTo, boolean mutable, Lifetime lifetime,
      String from)
      implements Command {
    public Join {
      if (lifetime == null) {
        lifetime = Lifetime.of(mutable);
      }
    }

    public Join(ArtifactKey key, long token, ActorRef<Reply> replyTo, Lifetime lifetime, String from) {
      this(key, token, replyTo, lifetime.kind() == Lifetime.Kind.METADATA || lifetime.kind() == Lifetime.Kind.FIXED,
          lifetime, from);
    }

    public Join(ArtifactKey key, long token, ActorRef<Reply> replyTo, Lifetime lifetime) {
      this(key, token, replyTo, lifetime, null);
    }

    public Join(ArtifactKey key, long token, ActorRef<Reply> replyTo, boolean mutable) {
      this(key, token, replyTo, mutable, Lifetime.of(mutable), null);
    }

    /** An immutable artifact's Join. */
    public Join(ArtifactKey key, long token, ActorRef<Reply> replyTo) {
      this(key, token, replyTo, false);
    }
  }

  /** The waiter's client went away: forget its registration (C2). Never disturbs the others (C3). */
  public record Leave(long token) implements Command {}

  /** Forget what is cached for the key (the node removed the bytes from its own store). */
  public record Purge(ActorRef<Done> replyTo) implements RecordCommand {}

  /**
   * Purge the key cluster-wide (issue 13 item 2): the record becomes a tombstone tagged
   * {@value Record#PURGED_TAG} (so a holder that is down now drops its copy when it starts,
   * {@code MissedPurges}), every holder it lists except {@code purgedBy} (the node that took the
   * request and removed its own copy already; null for none) is told to delete its copy, and a
   * remembered not-found is forgotten. A fetch running now finishes for its waiters and commits
   * its bytes as usual; the reply says so ({@link Purged#fetchRunning()}).
   */
  public record PurgeAll(String purgedBy, ActorRef<Purged> replyTo) implements Command {}

  /**
   * What a {@link PurgeAll} did: {@code copies} holders deleted their copy, {@code unreachable}
   * could not be asked, {@code fetchRunning}: a fetch was running and will commit what it
   * fetches; {@code recordRead}: false when the record could not be read (its holders are
   * unknown; the tombstone is still written, with retries).
   */
  public record Purged(int copies, int unreachable, boolean fetchRunning, boolean recordRead)
      implements CborSerializable {}

  /** The node at {@code peerUrl} committed a verified copy of the key's bytes (replica directory). */
  public record Holding(String peerUrl, String sha256) implements RecordCommand {}

  /** The node at {@code peerUrl} no longer holds the key's bytes (it evicted them). */
  public record Dropped(String peerUrl) implements RecordCommand {}

  /**
   * Issue 17: the node at {@code peerUrl} is copying the key's bytes and its copy's headers have
   * arrived and checked out: other nodes may read it as its download {@code downloadId} while it
   * grows. Its {@link Holding} or {@link CopyEnded} ends the upload the entity pointed it at.
   * A node of an earlier build drops it (an unknown message), and only loses the fan-out.
   */
  public record Copying(String peerUrl, long downloadId) implements RecordCommand {}

  /** Issue 17: the copy of the node at {@code peerUrl} ended without a commit ({@code reason}). */
  public record CopyEnded(String peerUrl, String reason) implements RecordCommand {}

  /**
   * A waiter's budget ran out: has the outcome of the fetch its {@code token} joined begun (status
   * and headers known)? Then the waiter keeps waiting for it (W3). Answered in every state: a
   * waiter the last fetch already answered is {@code Begun(true)} (its answer is on the way, or
   * was lost and its next ask finds the outcome); no fetch is {@code Begun(false)}.
   */
  public record AskBegun(long token, ActorRef<Begun> replyTo) implements Command {}

  /** The answer to {@link AskBegun}. */
  public record Begun(boolean begun) implements CborSerializable {}

  /** Sharding's stop message for passivation and hand-off. */
  public enum Stop implements Command { INSTANCE }

  private enum Idle implements Command { INSTANCE }

  private record HeadersKnown(long fetchId, Outcome.Streaming outcome) implements Command {}

  private record Finished(long fetchId, Outcome outcome, long startedNanos) implements Command {}

  /** Nobody reads the streaming body of fetch {@code fetchId} any more (C3). */
  private record Unread(long fetchId) implements Command {}

  private record RecordWritten(long revision, Throwable failure) implements RecordCommand {}

  private enum RetryRecordWrite implements RecordCommand { INSTANCE }

  private enum StopNow implements RecordCommand { INSTANCE }

  /** The wait bound of a node waiting for an upload slot may have passed (issue 17). */
  private enum SlotCheck implements RecordCommand { INSTANCE }

  /** The lease of the upload {@code requester} was pointed to ran out. */
  private record LeaseOver(String requester, long lease) implements RecordCommand {}

  /** {@code got} is null when the read failed. */
  private record PurgeRecordRead(PurgeAll purge, boolean fetchRunning, GetObjectResult<Record> got)
      implements RecordCommand {
    Record record() {
      return got == null ? null : got.value().orElse(Record.EMPTY);
    }
  }

  /** How long a purge waits for the record (which lists the holders) before it answers 503. */
  static final Duration PURGE_RECORD_READ_TIMEOUT = Duration.ofSeconds(5);

  /**
   * The longest a hand-off waits for a running fetch ({@link #stopMidFetch}): below sharding's
   * {@code handoff-timeout} (60 s), after which the shard stops the entity by force.
   */
  static final Duration HANDOFF_GRACE = Duration.ofSeconds(50);

  /** The longest a stop waits for a purge to finish (see {@link #stop}). */
  static final Duration STOP_GRACE = PURGE_RECORD_READ_TIMEOUT.plusSeconds(5);

  /** {@code got} is null when the read failed or took too long. */
  private record RecordRead(long flightId, GetObjectResult<Record> got) implements Command {
    Record record() {
      return got == null ? Record.EMPTY : got.value().orElse(Record.EMPTY);
    }
  }

  // ---- sharding -------------------------------------------------------------------------------

  /**
   * Registers the entity with Cluster Sharding. Sharding's own idle passivation is off for it:
   * the entity passivates itself when idle, and never mid-fetch (L1), whereas sharding's could
   * stop an entity whose download runs silently.
   *
   * @param idleTimeout how long an entity with no fetch and no waiter lives before passivating,
   *     alone and with other nodes
   */
  public static void init(ActorSystem<?> system, Node node, IdleTimeout idleTimeout) {
    ClusterSharding.get(system)
        .init(
            Entity.of(TYPE_KEY, ctx -> create(ctx.getEntityId(), node, idleTimeout, ctx.getShard()))
                .withSettings(ClusterShardingSettings.create(system).withNoPassivationStrategy())
                .withStopMessage(Stop.INSTANCE))
        // A node's first shard allocation and first entity start, run once now rather than on its
        // first miss (about 10 ms of code run the first time; docs/benchmarks.md, "A fresh node's
        // first requests"). The entity passivates when idle, like any.
        .tell(StartEntity.create(Command.class, WARM_UP_ID));
  }

  /** The entity {@link #init} starts: no key's, as a key's id is SHA-256 hex ({@link ArtifactKey#id}). */
  static final String WARM_UP_ID = "warm-up";

  /**
   * How long an idle entity lives without a message before it passivates (unless it still remembers
   * something, see {@link #passivateIfDone}): {@code alone} on a node that is the only member of
   * its cluster, {@code withOthers} otherwise. With other nodes, the answers of its last fetch cross
   * the network before their waiters' budgets may ask whether the outcome began (W3), and their
   * next requests find the key's record read already; alone, its answers are delivered in the
   * process, and an entity kept for nothing costs a few KB of heap for every missed key.
   */
  public record IdleTimeout(Duration alone, Duration withOthers) {
    /** The same timeout either way. */
    public static IdleTimeout of(Duration both) {
      return new IdleTimeout(both, both);
    }
  }

  static Behavior<Command> create(
      String entityId, Node node, IdleTimeout idleTimeout,
      ActorRef<ClusterSharding.ShardCommand> shard) {
    return Behaviors.setup(ctx -> new FetchEntity(entityId, node, idleTimeout, shard, ctx).idle());
  }

  // ---- the entity -----------------------------------------------------------------------------

  /** How long a miss waits for the replica directory before it asks the upstream instead. */
  static final Duration RECORD_READ_TIMEOUT = Duration.ofSeconds(1);

  private final Node node;
  private final IdleTimeout idleTimeout;
  private final ActorRef<ClusterSharding.ShardCommand> shard;
  private final ActorContext<Command> ctx;
  private final KeyRecords.Writer record;
  private final String persistenceId;
  private final String entityId; // the key's id
  private final Freshness freshness;
  private long fetchIds;
  /**
   * The waiters the last finished fetch answered (W3): one whose budget runs out before its answer
   * arrives (it crosses the network, then is decoded) is told the outcome has begun, not timed out.
   */
  private Set<Long> answered = Set.of();
  /** Purges whose record read has not come back yet: a stop waits for them (see {@link #stop}). */
  private int purgesReading;
  /** The shard asked this entity to stop (passivation, hand-off) while a purge was unfinished. */
  private boolean stopAsked;
  /** The hand-off's grace ({@link #stopMidFetch}), cancelled when the fetch ends within it. */
  private Future<?> handoffGrace;
  /** Issue 17: the nodes that can serve the key's bytes and the uploads pointed at each. */
  private final Sources sources = new Sources();
  /** The asking node of each waiter of the current flight (its Join's {@code from}), by token. */
  private final java.util.Map<Long, String> requesters = new java.util.HashMap<>();
  /** Waiters on other nodes waiting for an upload slot, in arrival order (issue 17). */
  private final List<Parked> parked = new java.util.ArrayList<>();
  /** The running download's outcome the parked waiters wait to be pointed at; null: none. */
  private Outcome.Streaming serving;
  /** When the next {@link SlotCheck} is due (ticker nanos); Long.MAX_VALUE: none scheduled. */
  private long slotCheckDue = Long.MAX_VALUE;

  /** A waiter on another node waiting for a source with a free upload slot. */
  private record Parked(long token, ActorRef<Reply> replyTo, String requester, Via via, long sinceNanos) {}

  private FetchEntity(String entityId, Node node, IdleTimeout idleTimeout,
      ActorRef<ClusterSharding.ShardCommand> shard, ActorContext<Command> ctx) {
    this.node = node;
    this.entityId = entityId;
    this.persistenceId = PersistenceId.of(TYPE_KEY.name(), entityId).id();
    this.record = node.records().writer(persistenceId);
    this.idleTimeout = idleTimeout;
    this.shard = shard;
    this.ctx = ctx;
    this.freshness = new Freshness(node.ticker());
  }

  // ---- idle: no fetch -------------------------------------------------------------------------

  private Behavior<Command> idle() {
    ctx.setReceiveTimeout(node.peers().othersMayHold() ? idleTimeout.withOthers() : idleTimeout.alone(),
        Idle.INSTANCE);
    return Behaviors.receive(Command.class)
        .onMessage(RecordCommand.class, this::onRecord)
        .onMessage(Join.class, this::joinIdle)
        .onMessage(PurgeAll.class, p -> purgeAll(p, false))
        .onMessage(AskBegun.class, this::begunBefore)
        .onMessage(Idle.class, idle -> passivateIfDone())
        .onMessage(Stop.class, this::stop)
        .onAnyMessage(FetchEntity::ignored)
        .build();
  }

  private Behavior<Command> joinIdle(Join join) {
    Optional<Outcome.NotFound> notFound = freshness.notFound();
    if (notFound.isPresent()) {
      join.replyTo().tell(Reply.of(notFound.get(), Via.NEGATIVE));
      return Behaviors.same();
    }
    // F2: another path may have committed the bytes in the gap; a record whose bytes are
    // missing or corrupt is not found by lookup, so it is fetched again.
    Optional<StoredArtifact> stored = node.store().lookup(join.key());
    Lifetime lifetime = join.lifetime();
    if (stored.isEmpty()) {
      return refusedWhileDraining(join) ? Behaviors.same() : startFetch(join.key(), join, null, lifetime);
    }
    FetchPolicy policy = node.policy(join.key().repo());
    long now = node.clock().millis();
    if (policy.isFresh(stored.get(), now, lifetime)) {
      send(join.replyTo(), new Outcome.Stored(stored.get()), Via.HIT, join.token(), join.from());
      return Behaviors.same();
    }
    // A stale copy: one conditional fetch; a copy within max-stale (and not must-revalidate) is
    // answered at once (STALE), an older one makes its request wait for the outcome.
    if (!policy.mayServeStale(stored.get(), now, lifetime)) {
      return refusedWhileDraining(join) ? Behaviors.same() : startFetch(join.key(), join, stored.get(), lifetime);
    }
    sendStale(join.replyTo(), stored.get());
    // A draining node starts no revalidation: the key's next entity, on a node that stays, will.
    return freshness.mayRevalidate() && !node.draining()
        ? startFetch(join.key(), null, stored.get(), lifetime) : Behaviors.same();
  }

  /**
   * L4: a draining node's entity starts no fetch for another node's waiter. Its shard is about
   * to be handed off, and a fetch started now would hold up the drain or be aborted by the
   * hand-off (then fetched again upstream by the next entity). The waiter is told to ask again
   * ({@link Reply.Retry}); once the shard has moved, its Join reaches the key's new entity.
   * Waiters on this node (requests taken before the drain began) are still served here.
   */
  private boolean refusedWhileDraining(Join join) {
    if (!node.draining() || isLocal(join.replyTo())) {
      return false;
    }
    join.replyTo().tell(new Reply.Retry("the node of the fetch entity is draining"));
    return true;
  }

  /**
   * L1: an idle entity passivates, but not while it still holds something a new incarnation would
   * not know: a record write in flight, a not-found within its TTL or the pause after a failed
   * revalidation ({@link Freshness}), or an upload it pointed a node at (issue 17). The next
   * {@code Idle}, one idle timeout later, tries again.
   */
  private Behavior<Command> passivateIfDone() {
    if (record.writing() || freshness.remembers() || sources.uploading()) {
      return Behaviors.same();
    }
    shard.tell(new ClusterSharding.Passivate<>(ctx.getSelf()));
    return passivating();
  }

  // ---- passivating: the shard is stopping this entity -----------------------------------------

  private Behavior<Command> passivating() {
    return Behaviors.receive(Command.class)
        .onMessage(RecordCommand.class, this::onRecord)
        // A fetch started now would be aborted by the stop. Asked again, the shard holds the
        // Join for the next incarnation.
        .onMessage(Join.class, join -> {
          join.replyTo().tell(new Reply.Retry("the fetch entity is passivating"));
          return Behaviors.same();
        })
        .onMessage(PurgeAll.class, p -> purgeAll(p, false))
        .onMessage(AskBegun.class, this::begunBefore)
        .onMessage(Stop.class, this::stop)
        .onAnyMessage(FetchEntity::ignored)
        .build();
  }

  // ---- purge: cluster-wide --------------------------------------------------------------------

  /** Reads the record for its holders (bounded), then {@link #purgeRead} writes the tombstone. */
  private Behavior<Command> purgeAll(PurgeAll purge, boolean fetchRunning) {
    freshness.purged();
    purgesReading++;
    ActorRef<Command> self = ctx.getSelf();
    node.records().read(persistenceId).toCompletableFuture()
        .orTimeout(PURGE_RECORD_READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
        .whenComplete((got, error) -> {
          if (error != null) {
            log.warn("purge of {}: could not read its record: {}", persistenceId, error.toString());
          }
          self.tell(new PurgeRecordRead(purge, fetchRunning, error != null ? null : got));
        });
    return Behaviors.same();
  }

  private Behavior<Command> purgeRead(PurgeRecordRead read) {
    purgesReading--;
    PurgeAll purge = read.purge();
    long now = node.clock().millis();
    if (read.got() != null) {
      record.seen(read.got());
    }
    // Written even when the read failed: the writer reads again and retries (the tombstone is
    // what a holder that missed the purge reads when it starts).
    record.update(r -> r.purged(now), ctx.getSelf(), RecordWritten::new);
    if (read.record() == null) {
      purge.replyTo().tell(new Purged(0, 0, read.fetchRunning(), false));
      return stopIfSettled();
    }
    List<String> holders = read.record().holders().stream()
        .filter(h -> !h.equals(purge.purgedBy())).toList();
    List<CompletableFuture<Boolean>> asked = holders.stream()
        .map(h -> node.peers().dropCopy(h, entityId).toCompletableFuture()
            .exceptionally(e -> {
              log.warn("purge of {}: holder {} could not be asked to drop its copy: {}", persistenceId, h, e.toString());
              return null;
            }))
        .toList();
    boolean fetchRunning = read.fetchRunning();
    CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
      int copies = 0;
      int unreachable = 0;
      for (CompletableFuture<Boolean> a : asked) {
        Boolean dropped = a.getNow(null);
        if (dropped == null) {
          unreachable++;
        } else if (dropped) {
          copies++;
        }
      }
      purge.replyTo().tell(new Purged(copies, unreachable, fetchRunning, true));
    });
    return stopIfSettled();
  }

  /**
   * The shard's stop (passivation, hand-off) with no fetch running. A purge this entity took is
   * finished first: its record read answered and its tombstone written. Stopped before that, the
   * purge's reply was lost and its caller answered 503 at its timeout (issue 13). The shard keeps
   * what arrives for the key meanwhile for the next incarnation.
   */
  private Behavior<Command> stop(Stop stop) {
    stopAsked = true;
    ctx.cancelReceiveTimeout(); // no second Passivate while the purge finishes
    if (settled()) {
      return Behaviors.stopped();
    }
    ctx.scheduleOnce(STOP_GRACE, ctx.getSelf(), StopNow.INSTANCE); // a database that does not answer
    return Behaviors.same();
  }

  private boolean settled() {
    return purgesReading == 0 && !record.writing();
  }

  private Behavior<Command> stopIfSettled() {
    return stopAsked && settled() ? Behaviors.stopped() : Behaviors.same();
  }

  // ---- in flight: one fetch and its waiters ---------------------------------------------------

  /**
   * @param leader the Join that waits for this fetch and is its MISS, or null (a revalidation
   *     whose request was answered STALE)
   * @param revalidating the stored copy a conditional fetch revalidates, or null
   * @param lifetime the key's lifetime, as the Join that started the fetch said
   */
  private Behavior<Command> startFetch(ArtifactKey key, Join leader, StoredArtifact revalidating, Lifetime lifetime) {
    FetchPolicy policy = node.policy(key.repo());
    Flight<ActorRef<Reply>> flight = new Flight<>(++fetchIds, key,
        leader == null ? Flight.NO_LEADER : leader.token(), revalidating, policy.maxWaiters(), FetchEntity::isLocal);
    flight.lifetime = lifetime;
    if (leader != null) {
      flight.join(leader.token(), leader.replyTo());
      if (leader.from() != null) {
        requesters.put(leader.token(), leader.from());
      }
    }
    ctx.cancelReceiveTimeout(); // L1: never passivate for idleness mid-fetch
    if (revalidating != null) {
      sources.newFetch(); // the bytes may change: nodes copying the old ones are no source of the new
    }
    node.fetchStarted(key.repo());
    // Peers give immutable bytes only: a revalidation asks the upstream, and a peer's copy of
    // mutable metadata may be older than the TTL allows (it would be stored here as fresh). A
    // key whose lifetime the upstream's headers give is copied (the copy keeps the holder's
    // headers and age): a generic repository's files are mostly immutable, and large.
    boolean immutable = revalidating == null
        && (lifetime.kind() == Lifetime.Kind.IMMUTABLE || lifetime.kind() == Lifetime.Kind.UPSTREAM);
    if (immutable && node.peers().othersMayHold()) {
      // Replica directory: read only on this node's miss, never on a hit. Joins meanwhile wait
      // in the flight like any coalesced waiter. Bounded: a database that hangs must not hold
      // up a miss (the upstream is asked instead).
      ActorRef<Command> self = ctx.getSelf();
      long id = flight.id;
      node.records().read(persistenceId).toCompletableFuture()
          .orTimeout(RECORD_READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
          .whenComplete((got, error) -> {
            if (error != null) {
              log.warn("could not read the record of {}; fetching from the upstream: {}", key, error.toString());
            }
            self.tell(new RecordRead(id, error != null ? null : got));
          });
    } else {
      if (revalidating == null) {
        record.assumeNew(); // no copy here, none elsewhere: its record is written without a read
      }
      run(flight, Download.Origin.UPSTREAM, false);
    }
    return inFlight(flight);
  }

  private Behavior<Command> inFlight(Flight<ActorRef<Reply>> flight) {
    return Behaviors.receive(Command.class)
        .onMessage(RecordCommand.class, this::onRecord)
        .onMessage(Join.class, join -> joinInFlight(flight, join))
        .onMessage(PurgeAll.class, p -> purgeAll(p, true))
        .onMessage(Leave.class, leave -> leave(flight, leave))
        .onMessage(AskBegun.class, ask -> {
          ask.replyTo().tell(new Begun(answered.contains(ask.token()) || flight.answered().contains(ask.token())
              || flight.started() && flight.download().begun()));
          return Behaviors.same();
        })
        .onMessage(RecordRead.class, read -> read.flightId() == flight.id ? recordRead(flight, read) : Behaviors.same())
        .onMessage(HeadersKnown.class, h -> h.fetchId() == flight.id ? headersKnown(flight, h) : Behaviors.same())
        .onMessage(Unread.class, u -> u.fetchId() == flight.id ? unread(flight) : Behaviors.same())
        .onMessage(Finished.class, f -> f.fetchId() == flight.id ? finished(flight, f) : Behaviors.same())
        .onMessage(Stop.class, stop -> stopMidFetch(flight))
        .onAnyMessage(FetchEntity::ignored)
        .onSignal(PostStop.class, signal -> stopped(flight))
        .build();
  }

  private Behavior<Command> joinInFlight(Flight<ActorRef<Reply>> flight, Join join) {
    if (flight.revalidating != null && join.lifetime().mayChange()) {
      // Stale-while-revalidate: the one revalidation runs; a young enough copy is served now.
      Optional<StoredArtifact> stale = node.store().lookup(join.key())
          .filter(s -> node.policy(join.key().repo()).mayServeStale(s, node.clock().millis(), join.lifetime()));
      if (stale.isPresent()) {
        sendStale(join.replyTo(), stale.get());
        return Behaviors.same();
      }
    }
    switch (flight.join(join.token(), join.replyTo())) {
      case STREAMING -> send(join.replyTo(), flight.streaming(), flight.via(join.token()), join.token(), join.from());
      case FULL -> join.replyTo().tell(new Reply.Failed(Failure.TOO_MANY_WAITERS, "too many requests waiting for this artifact"));
      case WAITING -> {
        if (join.from() != null) {
          requesters.put(join.token(), join.from()); // for its answer, when the headers are known
        }
      }
    }
    return Behaviors.same();
  }

  private Behavior<Command> recordRead(Flight<ActorRef<Reply>> flight, RecordRead read) {
    if (flight.started()) {
      return Behaviors.same();
    }
    if (read.got() != null) {
      record.seen(read.got()); // the write after this fetch need not read it again
    }
    Record r = read.record();
    Optional<String> self = node.peers().self();
    List<String> holders = r.cached() == null ? List.of()
        : node.peers().live(r.holders()).stream().filter(h -> self.isEmpty() || !h.equals(self.get())).toList();
    if (holders.isEmpty()) {
      run(flight, Download.Origin.UPSTREAM, false);
    } else {
      copyFrom(flight, holders, r.cached());
    }
    return Behaviors.same();
  }

  /**
   * The flight copies the recorded bytes from {@code holders}. Only they are asked: when the copy
   * fails by their fault, {@link #fellThrough} decides what comes next.
   */
  private void copyFrom(Flight<ActorRef<Reply>> flight, List<String> holders, StoredArtifact recorded) {
    Peers.HolderCopy copy = node.peers().copy(holders, recorded.sha256());
    flight.copying(copy, holders, recorded);
    run(flight, new Download.Origin(copy, recorded.sha256(), recorded.headers(), false,
        recorded.fetchedAtMillis()), true);
  }

  /**
   * Issue 13 item 4: a copy that failed by its holders' fault (none gave the bytes, the transfer
   * broke past resuming, or the bytes were short or not the recorded ones) is the holders'
   * failure, not the key's. The holders it asked are dropped from the record, and the same flight
   * goes on to the holders not asked yet, then to the upstream once (W2's bounded retries), its
   * waiters still waiting. Those already answered with the failed copy's stream saw it cut short,
   * never complete; a request after them finds the next download.
   */
  private Behavior<Command> fellThrough(Flight<ActorRef<Reply>> flight, Outcome failed) {
    List<String> asked = flight.copy().asked();
    List<String> untried = flight.fellThrough();
    log.warn("copying {} from {} failed ({}); dropping them from its record and fetching it from {}",
        flight.key, asked, describe(failed), untried.isEmpty() ? "the upstream" : untried);
    record.update(r -> {
      Record out = r;
      for (String holder : asked) {
        out = out.dropped(holder);
      }
      return out;
    }, ctx.getSelf(), RecordWritten::new);
    unpark(null); // they ask again, and join the next download (its waiters keep their requesters)
    if (untried.isEmpty()) {
      run(flight, Download.Origin.UPSTREAM, false);
    } else {
      copyFrom(flight, untried, flight.recorded());
    }
    return Behaviors.same();
  }

  private static String describe(Outcome failed) {
    return failed instanceof Outcome.Failed f ? f.cause() + ": " + f.reason()
        : failed instanceof Outcome.Unavailable u ? u.reason() : failed.toString();
  }

  private void run(Flight<ActorRef<Reply>> flight, Download.Origin origin, boolean fromPeer) {
    long started = node.ticker().read();
    long id = flight.id;
    ActorRef<Command> self = ctx.getSelf();
    flight.started(node.downloads().start(flight.key, node.policy(flight.key.repo()).inlineLimit(),
        flight.revalidating, flight.lifetime.honoursNoStore(), ctx.getSystem(), origin,
        streaming -> self.tell(new HeadersKnown(id, streaming)),
        outcome -> self.tell(new Finished(id, outcome, started))), fromPeer);
  }

  private Behavior<Command> headersKnown(Flight<ActorRef<Reply>> flight, HeadersKnown msg) {
    serving = msg.outcome();
    for (Flight.Answer<ActorRef<Reply>> a : flight.headersKnown(msg.outcome())) {
      send(a.replyTo(), msg.outcome(), a.via(), a.token());
    }
    ActorRef<Command> self = ctx.getSelf();
    long id = flight.id;
    node.downloads().find(msg.outcome().downloadId())
        .ifPresent(blob -> blob.whenUnread(() -> self.tell(new Unread(id))));
    return Behaviors.same();
  }

  /**
   * C3: a streaming body that nobody reads any more (no client of this node, no other node's
   * copy) is an orphan like a fetch every waiter left: it runs on to warm the cache when the
   * repository has a free orphan slot on this node, else it is aborted.
   */
  private Behavior<Command> unread(Flight<ActorRef<Reply>> flight) {
    if (flight.orphanSlot) {
      return Behaviors.same();
    }
    Optional<GrowingBlob> blob = node.downloads().find(flight.streaming().downloadId());
    if (blob.isEmpty() || blob.get().references() > 1 || !parked.isEmpty()) {
      return Behaviors.same(); // ended meanwhile, a reader came (back), or nodes wait to read it
    }
    if (node.tryTakeOrphanSlot(flight.key.repo())) {
      flight.orphanSlot = true;
      return Behaviors.same();
    }
    flight.download().abort("nobody reads the body and the repository's orphan fetch slots are full");
    ended(flight);
    unpark(null);
    requesters.clear();
    return afterFlight();
  }

  private Behavior<Command> finished(Flight<ActorRef<Reply>> flight, Finished msg) {
    if (flight.copy() != null && Peers.HolderCopy.failedBy(msg.outcome())) {
      return fellThrough(flight, msg.outcome());
    }
    String repo = flight.key.repo();
    node.events().fetchCompleted(repo, Duration.ofNanos(node.ticker().read() - msg.startedNanos()));
    ended(flight);
    Outcome outcome = msg.outcome();
    FetchPolicy policy = node.policy(repo);
    freshness.ended(outcome, flight.revalidating != null, policy,
        flight.revalidating == null ? 0 : policy.freshForMillis(flight.revalidating, flight.lifetime));
    // Waiters are answered first: the bytes are already committed to this node's store (F3), so
    // a failing database write (which stops the entity) can never strand them (W4).
    for (Flight.Answer<ActorRef<Reply>> a : flight.answers()) {
      send(a.replyTo(), outcome, outcome instanceof Outcome.Revalidated ? Via.REVALIDATED : a.via(), a.token());
    }
    answered = flight.answered();
    unpark(outcome);
    requesters.clear();
    StoredArtifact committed = committed(outcome);
    if (committed != null) {
      String self = node.peers().self().orElse(null);
      record.update(r -> r.committed(committed, self), ctx.getSelf(), RecordWritten::new);
    } else if (flight.revalidating != null && (outcome instanceof Outcome.NotFound || Outcome.notStored(outcome))) {
      // gone upstream, or the upstream now says not to store it (its stored copy was removed)
      record.update(Record::cleared, ctx.getSelf(), RecordWritten::new);
    }
    return afterFlight();
  }

  private static StoredArtifact committed(Outcome outcome) {
    if (outcome instanceof Outcome.Body b) {
      return b.artifact();
    }
    if (outcome instanceof Outcome.Stored s) {
      return s.artifact();
    }
    if (outcome instanceof Outcome.Revalidated r) {
      return r.artifact();
    }
    return null;
  }

  private Behavior<Command> leave(Flight<ActorRef<Reply>> flight, Leave leave) {
    requesters.remove(leave.token());
    for (java.util.Iterator<Parked> it = parked.iterator(); it.hasNext(); ) {
      Parked p = it.next();
      if (p.token() == leave.token()) {
        it.remove();
        node.events().peerUploadWaitEnded(Duration.ofNanos(node.ticker().read() - p.sinceNanos()));
      }
    }
    if (!flight.leave(leave.token())) {
      return Behaviors.same();
    }
    if (!flight.started()) {
      // Nobody waits and the record is still being read: nothing has started yet.
      ended(flight);
      return afterFlight();
    }
    if (flight.streaming() != null || flight.orphanSlot) {
      return Behaviors.same();
    }
    // C3: the fetch goes on to warm the cache, as long as the repository has a slot for it.
    if (node.tryTakeOrphanSlot(flight.key.repo())) {
      flight.orphanSlot = true;
      return Behaviors.same();
    }
    // Nobody waits and no slot is free: the fetch is aborted and forgotten at once, so that a
    // request arriving meanwhile starts a fresh fetch instead of joining a dead one.
    flight.download().abort("every waiter left and the repository's orphan fetch slots are full");
    ended(flight);
    unpark(null);
    requesters.clear();
    return afterFlight();
  }

  /**
   * The shard's stop mid-fetch: a hand-off (a rebalance when a node joins; a draining node's
   * fetches have ended before its shards move). Stopped now, the fetch would be aborted and the
   * key's next entity would fetch it from the upstream again (issue 17: a rebalance never causes
   * a refetch). So the fetch runs on for its waiters, its bytes are committed and recorded with
   * this node as their holder, and the entity stops after that: the next entity copies from here.
   * The shard holds what arrives for the key meanwhile. Bounded by {@link #HANDOFF_GRACE}, inside
   * sharding's own {@code handoff-timeout}; past it the fetch is aborted and every waiter told
   * to ask again (L2), as before. Nothing fetched yet (the record is still being read), or this
   * node shutting down: stops now.
   */
  private Behavior<Command> stopMidFetch(Flight<ActorRef<Reply>> flight) {
    if (!flight.started() || node.draining()
        || CoordinatedShutdown.get(ctx.getSystem()).getShutdownReason().isPresent()) {
      // This node is going away: its drain has let its fetches end already (L4); one still
      // running must not hold up the shutdown.
      return Behaviors.stopped();
    }
    if (!stopAsked) {
      stopAsked = true;
      ActorRef<Command> self = ctx.getSelf();
      // On the node's scheduler, in the node's time (a manual one in tests).
      handoffGrace = node.scheduler().schedule(node.io(), () -> self.tell(StopNow.INSTANCE), HANDOFF_GRACE.toNanos(),
          TimeUnit.NANOSECONDS);
    }
    return Behaviors.same();
  }

  /** Once a flight has ended: idle, or, when the shard asked for a stop meanwhile, stopping. */
  private Behavior<Command> afterFlight() {
    if (!stopAsked) {
      return idle();
    }
    if (handoffGrace != null) {
      // Left running, it would tell a stopped entity StopNow (a dead letter) when it falls due.
      handoffGrace.cancel(false);
      handoffGrace = null;
    }
    return settled() ? Behaviors.stopped() : passivating();
  }

  /** L2: however the entity stops mid-fetch, nobody is left waiting. */
  private Behavior<Command> stopped(Flight<ActorRef<Reply>> flight) {
    if (flight.started()) {
      flight.download().abort("the entity stopped");
    }
    ended(flight);
    for (Flight.Answer<ActorRef<Reply>> a : flight.answers()) {
      a.replyTo().tell(new Reply.Retry("the fetch entity stopped"));
    }
    unpark(null);
    requesters.clear();
    return Behaviors.same();
  }

  /** The flight's bookkeeping outside the entity ends: its gauge and its orphan slot. */
  private void ended(Flight<ActorRef<Reply>> flight) {
    node.fetchEnded(flight.key.repo());
    if (flight.orphanSlot) {
      flight.orphanSlot = false;
      node.releaseOrphanSlot(flight.key.repo());
    }
  }

  // ---- in every state: the record and the replica directory -----------------------------------

  private Behavior<Command> onRecord(RecordCommand c) {
    if (c instanceof RecordWritten w) {
      record.written(w.revision(), w.failure(), ctx.getSelf(), RecordWritten::new)
          .ifPresent(pause -> ctx.scheduleOnce(pause, ctx.getSelf(), RetryRecordWrite.INSTANCE));
      return stopIfSettled();
    } else if (c instanceof RetryRecordWrite) {
      record.retry(ctx.getSelf(), RecordWritten::new);
    } else if (c instanceof Holding h) {
      record.update(r -> r.holding(h.peerUrl(), h.sha256()), ctx.getSelf(), RecordWritten::new);
      sources.ended(h.peerUrl()); // its upload ended; it is a holder now (the record says so)
      serveParked();
    } else if (c instanceof Dropped d) {
      record.update(r -> r.dropped(d.peerUrl()), ctx.getSelf(), RecordWritten::new);
      sources.dropped(d.peerUrl());
    } else if (c instanceof Copying copying) {
      if (node.fanOut().on()) {
        sources.copying(copying.peerUrl(), copying.downloadId());
        serveParked();
      }
    } else if (c instanceof CopyEnded ended) {
      sources.ended(ended.peerUrl());
      serveParked();
    } else if (c instanceof LeaseOver l) {
      if (sources.expired(l.requester(), l.lease())) {
        log.info("the upload {} was pointed to for {} was not seen to end in time; its slot is free again",
            l.requester(), entityId);
        serveParked();
      }
    } else if (c instanceof SlotCheck) {
      slotCheckDue = Long.MAX_VALUE;
      serveParked();
    } else if (c instanceof PurgeRecordRead read) {
      return purgeRead(read);
    } else if (c instanceof StopNow) {
      return stopAsked ? Behaviors.stopped() : Behaviors.same();
    } else if (c instanceof Purge p) {
      freshness.purged();
      record.write(Record.EMPTY, ctx.getSelf(), RecordWritten::new);
      p.replyTo().tell(Done.getInstance());
    }
    return Behaviors.same();
  }

  /** No fetch runs: only a waiter the last one answered has seen its outcome begin. */
  private Behavior<Command> begunBefore(AskBegun ask) {
    ask.replyTo().tell(new Begun(answered.contains(ask.token())));
    return Behaviors.same();
  }

  /** Messages of another state (a late Leave, an Idle that raced a Join, an old fetch's). */
  private static Behavior<Command> ignored(Command other) {
    return Behaviors.same();
  }

  // ---- answering --------------------------------------------------------------------------------

  private static boolean isLocal(ActorRef<Reply> to) {
    return to.path().address().hasLocalScope();
  }

  /**
   * Answers a waiter. One on another node cannot read this node's store or downloads: it gets
   * what {@link Peers#forAnotherNode} makes of the outcome (the bytes inside, or where to read them).
   */
  private void send(ActorRef<Reply> to, Outcome outcome, Via via) {
    send(to, outcome, via, 0, null);
  }

  /** As above, for the waiter {@code token}: one on another node may be pointed at another source. */
  private void send(ActorRef<Reply> to, Outcome outcome, Via via, long token) {
    send(to, outcome, via, token, requesters.remove(token));
  }

  private void send(ActorRef<Reply> to, Outcome outcome, Via via, long token, String requester) {
    if (isLocal(to)) {
      to.tell(Reply.of(outcome, via));
      return;
    }
    if (requester != null && node.fanOut().on() && node.peers().self().isPresent()
        && node.peers().pointsAtBytes(outcome)) {
      pointOrPark(to, outcome, via, token, requester);
      return;
    }
    StoredArtifact committed = outcome instanceof Outcome.Body b ? b.artifact()
        : outcome instanceof Outcome.Stored s ? s.artifact()
        : outcome instanceof Outcome.Revalidated r ? r.artifact() : null;
    to.tell(node.peers().forAnotherNode(outcome, via, committed == null ? List.of() : otherHolders(committed)));
  }

  /**
   * Issue 13 item 4: the other live nodes this entity knows to hold {@code artifact}'s bytes, so
   * that a copy from this node that breaks may resume from one of them. Only what the entity
   * already knows (its last record read or write): a hit never reads the record.
   */
  private List<String> otherHolders(StoredArtifact artifact) {
    Record known = record.known();
    if (known == null || known.cached() == null || !known.cached().sha256().equals(artifact.sha256())) {
      return List.of();
    }
    Optional<String> self = node.peers().self();
    return node.peers().live(known.holders()).stream().filter(h -> self.isEmpty() || !h.equals(self.get())).toList();
  }

  // ---- fan-out: pointing a node at a source (issue 17, docs/scale.md "Fan-out") -----------------

  /**
   * Points a waiter on another node at the least-loaded source with a free slot. With none free,
   * one waiting for the running download waits here (it is a waiter of the flight: W2, W3) until a
   * slot frees or a new source is announced; any other is pointed at this node.
   */
  private void pointOrPark(ActorRef<Reply> to, Outcome outcome, Via via, long token, String requester) {
    List<Sources.Row> rows = candidates(outcome);
    Sources.Pick pick = sources.pick(rows, requester, node.fanOut().cap());
    if (pick == null && outcome instanceof Outcome.Streaming && outcome == serving) {
      parked.removeIf(p -> p.token() == token);
      parked.add(new Parked(token, to, requester, via, node.ticker().read()));
      node.events().peerUploadWaitStarted();
      checkSlotsIn(node.fanOut().waitBound().toNanos());
      return;
    }
    point(to, outcome, via, requester, pick != null ? pick : sources.owner(rows, rows.get(0), requester));
  }

  private void point(ActorRef<Reply> to, Outcome outcome, Via via, String requester, Sources.Pick pick) {
    long lease = sources.point(requester, pick.source().peerUrl(), node.ticker().read());
    long length = outcome instanceof Outcome.Streaming s ? s.length() : committedSize(outcome);
    // A lost Holding or CopyEnded, or a node that died mid-copy, cannot keep a slot forever.
    long leaseNanos = Math.max(LEASE_MIN.toNanos(), length * LEASE_NANOS_PER_BYTE);
    ActorRef<Command> self = ctx.getSelf();
    node.scheduler().schedule(Runnable::run, () -> self.tell(new LeaseOver(requester, lease)),
        leaseNanos, TimeUnit.NANOSECONDS);
    to.tell(node.peers().fromSource(outcome, via, source(pick.source()),
        pick.alsoAt().stream().map(FetchEntity::source).toList()));
  }

  /**
   * How long a node pointed at a source counts as on its way to announcing its copy (it normally
   * does within a round trip and a connect): past it, a lost {@code Copying} no longer holds the
   * nodes waiting past the wait bound.
   */
  static final Duration ON_ITS_WAY_PATIENCE = Duration.ofSeconds(5);

  /** The shortest lease of a pointed upload; a larger body's is 4 x its length at 100 MB/s. */
  static final Duration LEASE_MIN = Duration.ofSeconds(30);
  private static final long LEASE_NANOS_PER_BYTE = 40;

  private static long committedSize(Outcome outcome) {
    StoredArtifact a = committed(outcome);
    return a == null ? 0 : a.size();
  }

  private static Peers.Source source(Sources.Row row) {
    return new Peers.Source(row.peerUrl(), row.downloadId());
  }

  /**
   * The nodes that can serve {@code outcome}'s bytes: this node first (its running download, or its
   * committed blob), then the holders the entity knows of the same committed bytes, then the live
   * nodes still receiving their copy.
   */
  private List<Sources.Row> candidates(Outcome outcome) {
    List<Sources.Row> rows = new java.util.ArrayList<>();
    String self = node.peers().self().orElseThrow();
    rows.add(new Sources.Row(self, outcome instanceof Outcome.Streaming s ? s.downloadId() : -1,
        Sources.Row.OWNER, 0));
    StoredArtifact committed = committed(outcome);
    if (committed != null) {
      for (String holder : otherHolders(committed)) {
        rows.add(new Sources.Row(holder, -1, Sources.Row.HOLDING, 0));
      }
    }
    List<Sources.Row> receiving = sources.receiving();
    if (!receiving.isEmpty()) {
      Set<String> live = new java.util.HashSet<>(node.peers().live(receiving.stream().map(Sources.Row::peerUrl).toList()));
      for (Sources.Row r : receiving) {
        if (live.contains(r.peerUrl()) && rows.stream().noneMatch(x -> x.peerUrl().equals(r.peerUrl()))) {
          rows.add(r);
        }
      }
    }
    return rows;
  }

  /**
   * Points the waiting nodes that can be pointed now, in arrival order: at a source with a free
   * slot, or, past the wait bound and with no pointed copy still on its way to announcing itself,
   * at this node whatever its load (while some are, slots are coming within a round trip).
   */
  private void serveParked() {
    if (parked.isEmpty() || serving == null) {
      return;
    }
    long now = node.ticker().read();
    long bound = node.fanOut().waitBound().toNanos();
    long nextDue = Long.MAX_VALUE;
    for (java.util.Iterator<Parked> it = parked.iterator(); it.hasNext(); ) {
      Parked p = it.next();
      List<Sources.Row> rows = candidates(serving);
      Sources.Pick pick = sources.pick(rows, p.requester(), node.fanOut().cap());
      long onTheirWay = sources.copiesOnTheirWayUntil(ON_ITS_WAY_PATIENCE.toNanos());
      if (pick == null && now - p.sinceNanos() >= bound && onTheirWay <= now) {
        pick = sources.owner(rows, rows.get(0), p.requester());
      }
      if (pick == null) {
        nextDue = Math.min(nextDue, Math.max(p.sinceNanos() + bound, onTheirWay));
        continue;
      }
      it.remove();
      node.events().peerUploadWaitEnded(Duration.ofNanos(now - p.sinceNanos()));
      point(p.replyTo(), serving, p.via(), p.requester(), pick);
    }
    if (nextDue != Long.MAX_VALUE && nextDue > now) {
      checkSlotsIn(nextDue - now);
    }
  }

  /** A {@link SlotCheck} in {@code nanos} of the node's time, unless one is due before. */
  private void checkSlotsIn(long nanos) {
    long due = node.ticker().read() + nanos;
    if (due >= slotCheckDue) {
      return;
    }
    slotCheckDue = due;
    ActorRef<Command> self = ctx.getSelf();
    node.scheduler().schedule(Runnable::run, () -> self.tell(SlotCheck.INSTANCE), nanos, TimeUnit.NANOSECONDS);
  }

  /**
   * The flight ended: every waiting node is answered with {@code outcome} (pointed at a holder now),
   * or told to ask again when there is none (L2: nobody is left waiting).
   */
  private void unpark(Outcome outcome) {
    serving = null;
    List<Parked> waiting = List.copyOf(parked);
    parked.clear();
    long now = node.ticker().read();
    for (Parked p : waiting) {
      node.events().peerUploadWaitEnded(Duration.ofNanos(now - p.sinceNanos()));
      if (outcome == null) {
        p.replyTo().tell(new Reply.Retry("the download this node waited to copy ended"));
      } else {
        send(p.replyTo(), outcome, outcome instanceof Outcome.Revalidated ? Via.REVALIDATED : p.via(), p.token(),
            p.requester());
      }
    }
  }

  /**
   * A stale copy for a waiter: one on this node serves it from the store; one on another node
   * copies it from this node's peer endpoint (X-Cache: STALE either way); both are told whether
   * the last revalidation failed (Warning: 111).
   */
  private void sendStale(ActorRef<Reply> to, StoredArtifact stored) {
    if (isLocal(to)) {
      to.tell(new Reply.Stale(stored, freshness.revalidationFailed()));
    } else {
      to.tell(node.peers().staleForAnotherNode(stored, freshness.revalidationFailed(), otherHolders(stored)));
    }
  }
}
