package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.record.Record;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.UpstreamResponse;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.testkit.state.javadsl.PersistenceTestKitDurableStateStore;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS L1, L2: passivation, and stopping with waiters. Entities here idle out after 200 ms. */
class LifecycleTest extends EntityTestBase {
  private static final Duration IDLE = Duration.ofMillis(200);

  @Override
  Duration idleTimeout() {
    return IDLE;
  }

  @Test
  void l1_anIdleEntityPassivatesAndItsPersistedRecordStays() throws Exception {
    // L1: An idle entity (no fetch, no waiters) passivates; the persisted record of what is cached stays.
    String u = url("idle");
    ArtifactKey key = ArtifactKey.of("r", u);
    ByteString bytes = ByteString.fromString("cached, then idle");
    upstream.serve(u, bytes);
    reply(ask(key), Reply.Body.class);

    awaitAssert(() -> assertFalse(isRunning(key), "still running after its idle timeout"));
    Record record = persisted(key).orElseThrow();
    assertEquals(node.store().lookup(key).orElseThrow().sha256(), record.cached().sha256());
    assertEquals(Via.HIT, reply(ask(key), Reply.Stored.class).via());
    assertEquals(1, upstream.count(u));
  }

  @Test
  void l1_anEntityMidFetchIsNotPassivatedForIdleness() {
    // L1: An entity with a fetch in flight is never passivated for idleness: it finishes the fetch first.
    String repo = repo();
    String u = url("slow-but-busy");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 2);
    barrier(key);
    // Five idle timeouts pass with nothing sent to the entity.
    kit.createTestProbe().expectNoMessage(IDLE.multipliedBy(5));
    assertTrue(isRunning(key));
    assertEquals(0.0, fallthrough(repo, "entity-stopped"));

    ByteString body = ByteString.fromString("worth the wait");
    gate.complete(ScriptedUpstream.ok(body));
    answers.forEach(a -> assertEquals(body, reply(a, Reply.Body.class).bytes()));
    assertEquals(1, upstream.count(u));
    awaitAssert(() -> assertFalse(isRunning(key), "passivates once the fetch is over"));
  }

  @Test
  void l2_whenTheEntityStopsMidFetchEveryWaiterIsToldToAskAgain() throws Exception {
    // L2: When an entity stops for any reason, every remaining waiter is answered (retry or error) in its stop handler.
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
    answers.forEach(a -> assertEquals(body, reply(a, Reply.Body.class).bytes()));
    // The stopped entity's fetch plus one of its successor, however many waiters asked again.
    assertEquals(2, upstream.count(u));
    awaitAssert(() -> assertEquals(3.0, fallthrough(repo, "entity-stopped")));

    // The stopped fetch was aborted with its entity: its late response commits nothing.
    first.complete(ScriptedUpstream.ok(ByteString.fromString("stale")));
    awaitAssert(() -> assertEquals(0.0, inflight(repo)));
    assertEquals(body, node.store().readAll(reply(ask(key), Reply.Stored.class).artifact()));
  }

  @Test
  void l2_anEntityThatStopsByItselfMidFetchLosesNoWaiter() throws Exception {
    // L2 + W3: an entity that stops on its own (not through its shard: a crash, a failed write,
    // a stop message) answers Retry; the waiters' asks must reach its successor, not be lost as
    // dead letters while the shard has not yet noticed the stop (W4: nothing is stranded).
    String repo = repo(withBudget(Duration.ofSeconds(8)));
    String u = url("self-stopped");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);

    ByteString body = ByteString.fromString("after a self-stop");
    upstream.serve(u, body);
    sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id()).tell(FetchEntity.Stop.INSTANCE);
    for (CompletableFuture<Waiters.Answer> a : answers) {
      assertEquals(body, reply(a, Reply.Body.class).bytes());
    }
    assertEquals(2, upstream.count(u));
  }

  /**
   * Stops the key's entity the way its shard does (passivation, hand-off): the shard sends it the
   * stop message and buffers what arrives for it meanwhile. This is what the entity's own
   * ClusterSharding.Passivate asks the shard to do.
   */
  private void passivate(ArtifactKey key) {
    try {
      ActorSystem classic = Adapter.toClassic(kit.system());
      ActorRef entity = classic.actorSelection("/system/sharding/" + FetchEntity.TYPE_KEY.name() + "/*/" + key.id())
          .resolveOne(WAIT).toCompletableFuture().get();
      classic.actorSelection(entity.path().parent())
          .tell(new ShardRegion.Passivate(FetchEntity.Stop.INSTANCE), entity);
    } catch (Exception e) {
      throw new AssertionError("no entity for " + key, e);
    }
  }

  private boolean isRunning(ArtifactKey key) {
    TestProbe<ShardRegion.CurrentShardRegionState> probe = kit.createTestProbe();
    sharding.shardState().tell(new GetShardRegionState(FetchEntity.TYPE_KEY, probe.ref()));
    return probe.receiveMessage().getShards().stream()
        .anyMatch(s -> s.getEntityIds().contains(key.id()));
  }

  @SuppressWarnings("unchecked")
  private Optional<Record> persisted(ArtifactKey key) throws Exception {
    PersistenceTestKitDurableStateStore<Record> states =
        DurableStateStoreRegistry.get(kit.system()).getDurableStateStoreFor(
            PersistenceTestKitDurableStateStore.class, PersistenceTestKitDurableStateStore.Identifier());
    String id = PersistenceId.of(FetchEntity.TYPE_KEY.name(), key.id()).id();
    return states.getObject(id).toCompletableFuture().get().value();
  }
}
