package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.Record;
import dev.corral.core.store.HotBlobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.UpstreamResponse;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.ActorIdentity;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.DeadLetter;
import org.apache.pekko.actor.Identify;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.eventstream.EventStream;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * SEMANTICS L1, L2: passivation, and stopping with waiters.
 *
 * <p>L1 runs the entity in an actor system of its own on Pekko's {@link ManualTime}: its idle
 * timeout (a receive timeout) passes only when the test lets time pass, and a probe plays its
 * shard. L2 runs on the class's one-node cluster with real sharding; the waiters' pauses before
 * asking again run on the node's manual scheduler, moved by the test.
 */
class LifecycleTest extends EntityTestBase {
  /** A node's idle timeout ({@code CorralServer.ENTITY_IDLE}); on ManualTime it passes without being waited for. */
  private static final Duration IDLE = Duration.ofSeconds(30);
  /** The longest pause before the waiters of a stopped entity ask again (SharedAsks). */
  private static final Duration LONGEST_RETRY_PAUSE = Duration.ofMillis(500);

  private ActorTestKit manual;
  private ManualTime time;
  private final HeldRecords records = new HeldRecords();
  private Node manualNode;

  @BeforeAll
  void startManualTime() {
    manual = ActorTestKit.create("LifecycleTestManualTime", ManualTime.config().withFallback(ConfigFactory.load()));
    time = ManualTime.get(manual.system());
    manualNode = new Node(store, new HotBlobs(0), new KeyRecords(records), upstream, events,
        this::policy, ticker, scheduler, ticker.clock(),
        manual.system().dispatchers().lookup(DispatcherSelector.blocking()), Peers.NONE);
  }

  @AfterAll
  void stopManualTime() {
    manual.shutdownTestKit();
  }

  /** The key's entity on ManualTime; {@code shard} stands in for its shard. */
  private ActorRef<FetchEntity.Command> spawn(ArtifactKey key, TestProbe<Object> shard) {
    return spawn(key, shard, manualNode, FetchEntity.IdleTimeout.of(IDLE));
  }

  private ActorRef<FetchEntity.Command> spawn(ArtifactKey key, TestProbe<Object> shard, Node on,
      FetchEntity.IdleTimeout idle) {
    return manual.spawn(FetchEntity.create(key.id(), on, idle, shard.ref().narrow()));
  }

  /** {@link #manualNode} in a cluster of several nodes (none of which holds anything). */
  private Node withOthers() {
    Peers others = new Peers() {
      @Override
      public Optional<String> self() {
        return Peers.NONE.self();
      }

      @Override
      public boolean othersMayHold() {
        return true;
      }

      @Override
      public Reply forAnotherNode(dev.corral.core.download.Outcome outcome, Via via, List<String> alsoHeldBy) {
        return Peers.NONE.forAnotherNode(outcome, via, alsoHeldBy);
      }

      @Override
      public Arrival arrived(Reply.ForAnotherNode reply) {
        return Peers.NONE.arrived(reply);
      }

      @Override
      public HolderCopy copy(List<String> holders, String sha256) {
        return Peers.NONE.copy(holders, sha256);
      }
    };
    return new Node(store, new HotBlobs(0), new KeyRecords(records), upstream, events, this::policy, ticker,
        scheduler, ticker.clock(), manual.system().dispatchers().lookup(DispatcherSelector.blocking()), others);
  }

  /**
   * What the entity has sent its shard so far, once it has handled every message sent to it
   * before: a classic {@code Identify}, answered by the actor itself after those messages (and
   * not counted as activity by its receive timeout), is sent on the shard's behalf, so its answer
   * reaches the shard after anything the entity sent the shard first. Then its receive timeout
   * is set for the time now: a time passing afterwards is measured from here.
   */
  private List<Object> toShardSoFar(ActorRef<FetchEntity.Command> entity, TestProbe<Object> shard) {
    Adapter.toClassic(entity).tell(new Identify("barrier"), Adapter.toClassic(shard.ref()));
    List<Object> sent = new ArrayList<>();
    while (true) {
      Object m = shard.receiveMessage(WAIT);
      if (m instanceof ActorIdentity) {
        return sent;
      }
      sent.add(m);
    }
  }

  /** The key's entity, spawned, having fetched the key for one client, idle and not passivating. */
  private ActorRef<FetchEntity.Command> fetchedAndIdle(ArtifactKey key, TestProbe<Object> shard) {
    TestProbe<Reply> client = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = spawn(key, shard);
    entity.tell(new FetchEntity.Join(key, 1, client.ref()));
    client.expectMessageClass(Reply.Body.class, WAIT);
    assertEquals(List.of(), toShardSoFar(entity, shard), "fetched and idle");
    return entity;
  }

  private static void assertPassivates(ActorRef<FetchEntity.Command> entity, List<Object> toShard) {
    assertEquals(1, toShard.size(), "one message to the shard: " + toShard);
    ClusterSharding.Passivate<?> p = assertInstanceOf(ClusterSharding.Passivate.class, toShard.get(0));
    assertEquals(entity, p.entity());
  }

  @Test
  void l1_anIdleEntityPassivatesAndItsPersistedRecordStays() throws Exception {
    // L1: An idle entity (no fetch, no waiters) passivates; the persisted record of what is cached stays.
    String u = url("idle");
    ArtifactKey key = ArtifactKey.of("r", u);
    ByteString bytes = ByteString.fromString("cached, then idle");
    upstream.serve(u, bytes);
    TestProbe<Object> shard = manual.createTestProbe();
    TestProbe<Reply> client = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = spawn(key, shard);
    entity.tell(new FetchEntity.Join(key, 1, client.ref()));
    assertEquals(bytes, client.expectMessageClass(Reply.Body.class, WAIT).bytes());
    assertEquals(List.of(), toShardSoFar(entity, shard), "fetched and idle");

    time.timePasses(IDLE.minusMillis(1));
    assertEquals(List.of(), toShardSoFar(entity, shard), "passivated before its idle timeout");
    time.timePasses(Duration.ofMillis(1));
    assertPassivates(entity, toShardSoFar(entity, shard));

    // The shard stops it; the record stays, and the next incarnation serves the bytes it names.
    entity.tell(FetchEntity.Stop.INSTANCE);
    shard.expectTerminated(entity, WAIT);
    Record record = records.get(key).orElseThrow();
    assertEquals(node.store().lookup(key).orElseThrow().sha256(), record.cached().sha256());
    ActorRef<FetchEntity.Command> next = spawn(key, shard);
    next.tell(new FetchEntity.Join(key, 2, client.ref()));
    assertEquals(Via.HIT, client.expectMessageClass(Reply.Stored.class, WAIT).via());
    assertEquals(1, upstream.count(u));
  }

  @Test
  void l1_anIdleEntityPassivatesSoonerOnANodeAloneThanInACluster() {
    // L1: An idle entity passivates: after the alone timeout on a node alone (its answers never
    // leave the process), after the longer one when other nodes may ask it (W3: its last answers
    // cross the network before their waiters' budgets ask whether the outcome began).
    FetchEntity.IdleTimeout idle = new FetchEntity.IdleTimeout(Duration.ofSeconds(5), IDLE);
    for (Node on : List.of(manualNode, withOthers())) {
      Duration expected = on == manualNode ? idle.alone() : idle.withOthers();
      String u = url("idle-" + expected.toSeconds());
      ArtifactKey key = ArtifactKey.of("r", u);
      upstream.serve(u, ByteString.fromString("fetched, then idle"));
      TestProbe<Object> shard = manual.createTestProbe();
      TestProbe<Reply> client = manual.createTestProbe();
      ActorRef<FetchEntity.Command> entity = spawn(key, shard, on, idle);
      entity.tell(new FetchEntity.Join(key, 1, client.ref()));
      client.expectMessageClass(Reply.Body.class, WAIT);
      assertEquals(List.of(), toShardSoFar(entity, shard), "fetched and idle");

      time.timePasses(expected.minusMillis(1));
      assertEquals(List.of(), toShardSoFar(entity, shard), "passivated before " + expected);
      time.timePasses(Duration.ofMillis(1));
      assertPassivates(entity, toShardSoFar(entity, shard));
    }
  }

  @Test
  void l1_anIdleEntityRemembersANotFoundForItsWholeTtlThenPassivates() {
    // L1: An idle entity passivates. W2: a not-found is remembered for its own TTL, and that memory
    // lives in the entity: one whose TTL outlasts the idle timeout keeps the entity until it ends.
    Duration ttl = IDLE.multipliedBy(3);
    FetchPolicy d = FetchPolicy.defaults();
    String repo = repo(new FetchPolicy(d.inlineLimit(), ttl, d.waiterBudget(), false, d.maxWaiters(),
        d.maxOrphanFetches()));
    String u = url("gone-for-long");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.on(u, r -> CompletableFuture.completedFuture(
        ScriptedUpstream.of(404, org.apache.pekko.stream.javadsl.Source.empty(), java.util.OptionalLong.of(0))));
    TestProbe<Object> shard = manual.createTestProbe();
    TestProbe<Reply> client = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = spawn(key, shard);
    entity.tell(new FetchEntity.Join(key, 1, client.ref()));
    client.expectMessageClass(Reply.NotFound.class, WAIT);
    assertEquals(List.of(), toShardSoFar(entity, shard), "idle after the not-found");

    for (int i = 1; i < 3; i++) { // the node's time and Pekko's pass together
      ticker.advance(IDLE);
      time.timePasses(IDLE);
      assertEquals(List.of(), toShardSoFar(entity, shard), "passivated with its not-found remembered");
    }
    entity.tell(new FetchEntity.Join(key, 2, client.ref()));
    assertEquals(Via.NEGATIVE, client.expectMessageClass(Reply.NotFound.class, WAIT).via());
    assertEquals(1, upstream.count(u));

    ticker.advance(IDLE); // the TTL is over: nothing left to remember
    time.timePasses(IDLE);
    assertPassivates(entity, toShardSoFar(entity, shard));
  }

  @Test
  void l1_aPurgeTakenByAPassivatingEntityIsAnsweredAndTombstonedBeforeItStops() throws Exception {
    // L1: An idle entity passivates; the persisted record stays. A purge that reaches it between
    // its Passivate and the shard's stop still reads the record, writes the tombstone and answers
    // (stopped at once, its caller got a 503 at its timeout).
    String u = url("purged-while-passivating");
    ArtifactKey key = ArtifactKey.of("r", u);
    upstream.serve(u, ByteString.fromString("cached, then purged"));
    TestProbe<Object> shard = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = fetchedAndIdle(key, shard);
    time.timePasses(IDLE);
    assertPassivates(entity, toShardSoFar(entity, shard));

    CompletableFuture<Done> read = records.holdRead(key);
    TestProbe<FetchEntity.Purged> purged = manual.createTestProbe();
    entity.tell(new FetchEntity.PurgeAll(null, purged.ref()));
    entity.tell(FetchEntity.Stop.INSTANCE); // the shard's answer to the Passivate
    read.complete(Done.getInstance());
    FetchEntity.Purged answer = purged.expectMessageClass(FetchEntity.Purged.class, WAIT);
    assertTrue(answer.recordRead());
    shard.expectTerminated(entity, WAIT);
    assertTrue(records.get(key).orElseThrow().purgedAtMillis() > 0, "the tombstone was written");
  }

  @Test
  void l1_anEntityMidFetchIsNotPassivatedForIdleness() {
    // L1: An entity with a fetch in flight is never passivated for idleness: it finishes the fetch first.
    String u = url("slow-but-busy");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    TestProbe<Object> shard = manual.createTestProbe();
    TestProbe<Reply> a = manual.createTestProbe();
    TestProbe<Reply> b = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = spawn(key, shard);
    entity.tell(new FetchEntity.Join(key, 1, a.ref()));
    entity.tell(new FetchEntity.Join(key, 2, b.ref()));
    assertEquals(List.of(), toShardSoFar(entity, shard));

    time.timePasses(IDLE.multipliedBy(5)); // five idle timeouts, nothing sent to the entity
    assertEquals(List.of(), toShardSoFar(entity, shard), "passivated mid-fetch");

    ByteString body = ByteString.fromString("worth the wait");
    gate.complete(ScriptedUpstream.ok(body));
    assertEquals(body, a.expectMessageClass(Reply.Body.class, WAIT).bytes());
    assertEquals(body, b.expectMessageClass(Reply.Body.class, WAIT).bytes());
    assertEquals(1, upstream.count(u));
    assertEquals(List.of(), toShardSoFar(entity, shard));
    time.timePasses(IDLE);
    assertPassivates(entity, toShardSoFar(entity, shard));
  }

  @Test
  void l1_anIdleEntityWhoseRecordIsStillBeingWrittenPassivatesOnlyOnceItIsWritten() {
    // L1: the persisted record stays: an entity does not passivate with its record's write in flight.
    String u = url("slow-record");
    ArtifactKey key = ArtifactKey.of("r", u);
    upstream.serve(u, ByteString.fromString("written slowly"));
    CompletableFuture<Done> written = records.hold(key);
    TestProbe<Object> shard = manual.createTestProbe();
    ActorRef<FetchEntity.Command> entity = fetchedAndIdle(key, shard);

    time.timePasses(IDLE);
    assertEquals(List.of(), toShardSoFar(entity, shard), "passivated while its record was being written");
    written.complete(Done.getInstance()); // the write's answer reaches the entity as a message
    assertEquals(List.of(), toShardSoFar(entity, shard));
    time.timePasses(IDLE);
    assertPassivates(entity, toShardSoFar(entity, shard));
    assertTrue(records.get(key).isPresent());
  }

  @Test
  void l2_whenTheEntityStopsMidFetchEveryWaiterIsToldToAskAgain() throws Exception {
    // L2: When an entity stops for any reason, every remaining waiter is answered (retry or error) in its stop handler.
    // Here a hand-off whose fetch outlasts the grace: the fetch is aborted and fetched again.
    // W3: A waiter whose entity stopped without an outcome asks the entity again, never the upstream directly.
    String repo = repo();
    String u = url("stopped");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> first = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);

    ByteString body = ByteString.fromString("from the next incarnation");
    upstream.serve(u, body);
    passivate(key);
    // A hand-off lets a running fetch finish (see the next test), for HANDOFF_GRACE of the node's
    // time at most: past it the entity stops and the fetch is aborted.
    awaitAssert(() -> assertEquals(1, scheduler.pendingWithDelay(FetchEntity.HANDOFF_GRACE), "the hand-off's grace is not running"));
    assertFalse(answers.stream().anyMatch(CompletableFuture::isDone), "answered before the grace ran out");
    // Within the grace the node's waiters asked again (Waiters.ASK_AGAIN, 5 s of the node's
    // time), and the shard holds that Join for the key's next entity; the stop handler's Retry
    // (L2) reaches asks already superseded (the self-stop below shows it starting the pause).
    ticker.advance(FetchEntity.HANDOFF_GRACE);
    awaitAssert(() -> {
      if (scheduler.dueWithin(LONGEST_RETRY_PAUSE) >= 1) {
        ticker.advance(LONGEST_RETRY_PAUSE); // a Retry that overtook the re-ask: its pause
      }
      assertTrue(answers.stream().allMatch(CompletableFuture::isDone), "waiters still waiting");
    });
    answers.forEach(a -> assertEquals(body, reply(a, Reply.Body.class).bytes()));
    // The stopped entity's fetch plus one of its successor, however many waiters asked again.
    assertEquals(2, upstream.count(u));

    // The stopped fetch was aborted with its entity: its late response commits nothing.
    first.complete(ScriptedUpstream.ok(ByteString.fromString("stale")));
    awaitAssert(() -> assertEquals(0.0, inflight(repo)));
    assertEquals(body, node.store().readAll(reply(ask(key), Reply.Stored.class).artifact()));
  }

  @Test
  void l2_aHandOffMidFetchLetsTheFetchFinishForItsWaitersAndIsNotFetchedAgain() throws Exception {
    // Issue 17: the shard's stop mid-fetch (a rebalance) does not abort the fetch: its waiters
    // get its bytes, they are committed and recorded, and the entity stops after that; the key's
    // next entity finds them (here a HIT; in a cluster, a copy from this node), never a second
    // upstream request.
    String repo = repo();
    String u = url("handed-off");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> first = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);
    passivate(key);
    awaitAssert(() -> assertEquals(1, scheduler.pendingWithDelay(FetchEntity.HANDOFF_GRACE), "the hand-off's grace is not running"));
    assertFalse(answers.stream().anyMatch(CompletableFuture::isDone), "answered before the fetch ended");

    ByteString body = ByteString.fromString("fetched across a hand-off");
    first.complete(ScriptedUpstream.ok(body));
    answers.forEach(a -> assertEquals(body, reply(a, Reply.Body.class).bytes()));
    assertEquals(0.0, fallthrough(repo, "entity-stopped"), "a waiter was told to ask again");
    awaitAssert(() -> assertEquals(0.0, inflight(repo)));
    assertEquals(body, node.store().readAll(reply(ask(key), Reply.Stored.class).artifact()));
    assertEquals(1, upstream.count(u), "fetched again after the hand-off");
    // Its grace was let go with the fetch's end: left pending, it told the stopped entity StopNow
    // later (a dead letter), and a later test's wait for "the grace is running" saw it instead of
    // its own (LifecycleTest's flake of 2026-12-07).
    awaitAssert(() -> assertEquals(0, scheduler.pendingWithDelay(FetchEntity.HANDOFF_GRACE), "the hand-off's grace still pending"));
  }

  @Test
  void l2_anEntityThatStopsByItselfMidFetchLosesNoWaiter() throws Exception {
    // L2 + W3: an entity that stops on its own (not through its shard: a crash, a failed write,
    // a stop message) answers Retry; the waiters' asks must reach its successor, not be lost as
    // dead letters while the shard has not yet noticed the stop (W4: nothing is stranded).
    String repo = repo(withBudget(Duration.ofHours(1)));
    String u = url("self-stopped");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);
    Queue<DeadLetter> lost = new ConcurrentLinkedQueue<>();
    ActorRef<DeadLetter> deadLetters = kit.spawn(Behaviors.receive(DeadLetter.class)
        .onAnyMessage(d -> {
          lost.add(d);
          return Behaviors.same();
        }).build());
    kit.system().eventStream().tell(new EventStream.Subscribe<>(DeadLetter.class, deadLetters));
    org.apache.pekko.actor.ActorRef nobody = Adapter.toClassic(deadLetters);
    kit.system().eventStream().tell(new EventStream.Publish<>(new DeadLetter("subscribed", nobody, nobody)));
    awaitAssert(() -> assertTrue(lost.stream().anyMatch(d -> "subscribed".equals(d.message())), "not subscribed yet"));

    ByteString body = ByteString.fromString("after a self-stop");
    upstream.serve(u, body);
    sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id()).tell(FetchEntity.Stop.INSTANCE);
    // Told by a message, not by its shard: mid-fetch it waits for its fetch up to the hand-off's
    // grace, then stops by itself.
    awaitAssert(() -> assertEquals(1, scheduler.pendingWithDelay(FetchEntity.HANDOFF_GRACE), "the grace is not running"));
    // Within the grace the node's waiters asked again (ASK_AGAIN after their asks), and a reply to
    // the ask they replaced is dropped: the grace must end after that Join reached the entity, or
    // the stop handler's Retry is dropped and the Join races the grace's StopNow (CI's flake of
    // 2026-12-07). So: to just before the grace, wait for the Join, then the last nanosecond.
    ticker.advance(FetchEntity.HANDOFF_GRACE.minusNanos(1));
    awaitDelivered(key);
    ticker.advance(Duration.ofNanos(1));
    // L2: the stop handler's Retry, not the next re-ask (ASK_AGAIN away), starts the pause (a
    // silenced handler fails here).
    awaitRetryPause();
    ticker.advance(LONGEST_RETRY_PAUSE);
    // Whether the shard has noticed the stop by then is up to the machine: a Join it delivers to
    // the stopped entity is a dead letter, and the node asks again once that ask has gone
    // unanswered for ASK_AGAIN of the node's time. Each lost Join is answered by moving the
    // node's time that far (the re-ask has run when advance returns), until every waiter is served.
    int[] joinsLost = {0};
    awaitAssert(() -> {
      for (DeadLetter d; (d = lost.poll()) != null; ) {
        // Only a lost Join: the aborted fetch's own last message to its stopped entity is one too.
        if (d.message() instanceof FetchEntity.Join j && j.key().equals(key)) {
          joinsLost[0]++;
          ticker.advance(Waiters.ASK_AGAIN);
        }
      }
      assertTrue(answers.stream().allMatch(CompletableFuture::isDone), "waiters still waiting");
    });
    for (CompletableFuture<Waiters.Answer> a : answers) {
      assertEquals(body, reply(a, Reply.Body.class).bytes());
    }
    assertEquals(2, upstream.count(u), "the stopped entity's fetch and its successor's (" + joinsLost[0] + " Joins lost)");
    kit.system().eventStream().tell(new EventStream.Unsubscribe<>(deadLetters));
    kit.stop(deadLetters);
  }

  /**
   * Waits until every message sent to the key's entity through its shard so far has reached it: an
   * {@link FetchEntity.AskBegun} takes the same way behind them (the region, the shard, the entity's
   * mailbox, each in order), and the entity answers it in every state without changing anything.
   */
  private void awaitDelivered(ArtifactKey key) {
    try {
      entity(key).<FetchEntity.Begun>ask(replyTo -> new FetchEntity.AskBegun(-1, replyTo), WAIT)
          .toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("the entity of " + key + " did not answer", e);
    }
  }

  /** Waits until a waiter told Retry has its pause before asking again on the node's scheduler. */
  private void awaitRetryPause() {
    awaitAssert(() -> assertTrue(scheduler.dueWithin(LONGEST_RETRY_PAUSE) >= 1, "no retry pause scheduled"));
  }

  /**
   * Stops the key's entity the way its shard does (passivation, hand-off): the shard sends it the
   * stop message and buffers what arrives for it meanwhile. This is what the entity's own
   * ClusterSharding.Passivate asks the shard to do.
   */
  private void passivate(ArtifactKey key) {
    try {
      ActorSystem classic = Adapter.toClassic(kit.system());
      org.apache.pekko.actor.ActorRef entity = classic.actorSelection("/system/sharding/" + FetchEntity.TYPE_KEY.name() + "/*/" + key.id())
          .resolveOne(WAIT).toCompletableFuture().get();
      classic.actorSelection(entity.path().parent())
          .tell(new ShardRegion.Passivate(FetchEntity.Stop.INSTANCE), entity);
    } catch (Exception e) {
      throw new AssertionError("no entity for " + key, e);
    }
  }

  /**
   * The key records of the ManualTime node: in memory, each write answered at once (on the
   * writing thread, so its message reaches the entity before anything sent after), unless the
   * test holds a key's writes.
   */
  private static final class HeldRecords implements DurableStateUpdateStore<Record> {
    private final Map<String, Record> rows = new ConcurrentHashMap<>();
    private final Map<String, Long> revisions = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Done>> held = new ConcurrentHashMap<>();
    private final Map<String, CompletableFuture<Done>> heldReads = new ConcurrentHashMap<>();

    Optional<Record> get(ArtifactKey key) {
      return Optional.ofNullable(rows.get(id(key)));
    }

    /** The key's next write is answered when the returned future is completed. */
    CompletableFuture<Done> hold(ArtifactKey key) {
      CompletableFuture<Done> gate = new CompletableFuture<>();
      held.put(id(key), gate);
      return gate;
    }

    private static String id(ArtifactKey key) {
      return PersistenceId.of(FetchEntity.TYPE_KEY.name(), key.id()).id();
    }

    /** The key's next read is answered when the returned future is completed. */
    CompletableFuture<Done> holdRead(ArtifactKey key) {
      CompletableFuture<Done> gate = new CompletableFuture<>();
      heldReads.put(id(key), gate);
      return gate;
    }

    @Override
    public CompletionStage<GetObjectResult<Record>> getObject(String persistenceId) {
      CompletableFuture<Done> gate = heldReads.remove(persistenceId);
      return (gate == null ? CompletableFuture.completedFuture(Done.getInstance()) : gate)
          .thenApply(d -> new GetObjectResult<>(
              Optional.ofNullable(rows.get(persistenceId)), revisions.getOrDefault(persistenceId, 0L)));
    }

    @Override
    public CompletionStage<Done> upsertObject(String persistenceId, long revision, Record value, String tag) {
      CompletableFuture<Done> gate = held.remove(persistenceId);
      if (gate == null) {
        rows.put(persistenceId, value);
        revisions.put(persistenceId, revision);
        return CompletableFuture.completedFuture(Done.getInstance());
      }
      return gate.thenApply(d -> {
        rows.put(persistenceId, value);
        revisions.put(persistenceId, revision);
        return d;
      });
    }

    @Override
    public CompletionStage<Done> deleteObject(String persistenceId) {
      return deleteObject(persistenceId, 0);
    }

    @Override
    public CompletionStage<Done> deleteObject(String persistenceId, long revision) {
      rows.remove(persistenceId);
      revisions.remove(persistenceId);
      return CompletableFuture.completedFuture(Done.getInstance());
    }
  }
}
