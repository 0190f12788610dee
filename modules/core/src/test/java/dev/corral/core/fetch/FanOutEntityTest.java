package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.actor.ActorIdentity;
import org.apache.pekko.actor.Identify;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.ManualTime;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 17, the entity's half of fan-out (docs/scale.md, "Fan-out"): which source a node that
 * needs the bytes is pointed at, the upload cap, the wait for a slot and its bound, in the node's
 * injected time. The nodes that copy are probes in a second actor system, reached over Artery; the
 * stand-in {@link Peers} tells them the source the entity chose.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FanOutEntityTest {
  private static final String E = "http://127.0.0.1:21000";
  private static final String B = "http://127.0.0.1:21001";
  private static final String C = "http://127.0.0.1:21002";
  private static final String D = "http://127.0.0.1:21003";
  private static final String F = "http://127.0.0.1:21004";
  private static final String G = "http://127.0.0.1:21005";
  private static final String URL = "http://upstream.example/fan-out.bin";
  private static final int SIZE = 100_000;

  private static Config remote() {
    return ConfigFactory.parseString("""
        pekko.actor.provider = remote
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        """).withFallback(ConfigFactory.load());
  }

  private final ActorTestKit entityNode = ActorTestKit.create("FanOutEntityNode", remote());
  private final ActorTestKit copyingNodes = ActorTestKit.create("FanOutCopyingNodes", remote());
  private final Set<String> gone = ConcurrentHashMap.newKeySet();
  private final EntityTestBase.MovableTicker ticker = new EntityTestBase.MovableTicker();
  private final ManualScheduler scheduler = new ManualScheduler(ticker);
  private final AtomicLong tokens = new AtomicLong();

  @org.junit.jupiter.api.BeforeEach
  void noneGone() {
    gone.clear(); // the nodes and the ticker are the class's; each test says which nodes have left
  }

  @AfterAll
  void stop() {
    copyingNodes.shutdownTestKit();
    entityNode.shutdownTestKit();
  }

  /** Where the entity pointed a node: {@code peerUrl}'s download ({@code downloadId}) or blob (-1). */
  public record Pointed(String peerUrl, long downloadId, List<String> alsoAt) implements Reply.ForAnotherNode {}

  /** What a node is told without fan-out: read it from the entity's node. */
  public record FromOwner() implements Reply.ForAnotherNode {}

  /** This node is {@link #E}; the nodes in {@code gone} have left the cluster. */
  final class Cluster implements Peers {
    @Override
    public Optional<String> self() {
      return Optional.of(E);
    }

    @Override
    public boolean othersMayHold() {
      return false; // the fetch goes to the upstream
    }

    @Override
    public List<String> live(List<String> holders) {
      return holders.stream().filter(h -> !gone.contains(h)).toList();
    }

    @Override
    public boolean pointsAtBytes(Outcome outcome) {
      return outcome instanceof Outcome.Streaming || outcome instanceof Outcome.Stored;
    }

    @Override
    public Reply fromSource(Outcome outcome, Via via, Source source, List<Source> alsoAt) {
      return new Pointed(source.peerUrl(), source.downloadId(), alsoAt.stream().map(Source::peerUrl).toList());
    }

    @Override
    public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
      return new FromOwner();
    }

    @Override
    public Arrival arrived(Reply.ForAnotherNode reply) {
      throw new UnsupportedOperationException();
    }

    @Override
    public HolderCopy copy(List<String> holders, String sha256) {
      throw new UnsupportedOperationException();
    }
  }

  /** A node that copies: its probe, as the entity's node addresses it. */
  private record Copier(String peerUrl, TestProbe<Reply> probe, ActorRef<Reply> remote) {}

  private Copier copier(String peerUrl) {
    return copier(peerUrl, entityNode);
  }

  /** A node that copies, as the entity's node {@code entityAt} addresses it. */
  private Copier copier(String peerUrl, ActorTestKit entityAt) {
    TestProbe<Reply> probe = copyingNodes.createTestProbe();
    ActorRef<Reply> remote = ActorRefResolver.get(entityAt.system())
        .resolveActorRef(ActorRefResolver.get(copyingNodes.system()).toSerializationFormat(probe.ref()));
    return new Copier(peerUrl, probe, remote);
  }

  private FetchEntity.Join join(ArtifactKey key, Copier c) {
    return new FetchEntity.Join(key, tokens.incrementAndGet(), c.remote(), dev.corral.core.upstream.Lifetime.IMMUTABLE,
        c.peerUrl());
  }

  /**
   * An entity on {@link #E} whose fetch streams: its headers and first bytes come at once, the rest
   * only when the returned future completes (never, in these tests).
   */
  private ActorRef<FetchEntity.Command> entity(Path dir, ArtifactKey key, FanOut fanOut) throws Exception {
    TestProbe<ClusterSharding.ShardCommand> shard = entityNode.createTestProbe();
    return entity(entityNode, dir, key, fanOut, new CompletableFuture<>(), Duration.ofHours(1), shard.ref());
  }

  /**
   * The same in the actor system {@code at}, with the rest of the body when {@code rest}
   * completes, and its own idle timeout and shard.
   */
  private ActorRef<FetchEntity.Command> entity(ActorTestKit at, Path dir, ArtifactKey key, FanOut fanOut,
      CompletableFuture<ByteString> rest, Duration idle, ActorRef<ClusterSharding.ShardCommand> shard)
      throws Exception {
    ScriptedUpstream upstream = new ScriptedUpstream();
    ByteString body = EntityTestBase.bytes(SIZE, 17);
    upstream.on(URL, r -> CompletableFuture.completedFuture(new UpstreamResponse(200,
        List.of(new Header("Content-Type", "application/octet-stream")), OptionalLong.of(SIZE),
        Source.single(body.take(1000)).concat(Source.completionStage(rest)))));
    FetchPolicy small = new FetchPolicy(1024, Duration.ofSeconds(30), Duration.ofSeconds(60), false, 10_000, 16);
    Node node = new Node(DiskStore.open(dir, 1 << 24, ticker.clock()), new HotBlobs(0),
        new KeyRecords(new OtherHoldersTest.Records(null)), upstream, new CountingEvents(), r -> small,
        ticker, scheduler, ticker.clock(), Runnable::run, new Cluster());
    node.fanOut(fanOut);
    return at.spawn(FetchEntity.create(key.id(), node, FetchEntity.IdleTimeout.of(idle), shard));
  }

  private static Pointed pointed(Copier c) {
    return c.probe().expectMessageClass(Pointed.class, Duration.ofSeconds(10));
  }

  /**
   * Asserts that {@code c} is still waiting, once the entity has handled every message sent to it
   * so far (a Join, a Copying, the timer messages of a {@code ticker.advance}): a classic
   * {@code Identify}, sent on c's behalf, is answered by the entity itself after those messages,
   * and its answer travels to c's node behind whatever the entity sent c before (one connection,
   * one recipient), so c's next message is that answer unless the entity pointed c somewhere.
   */
  @SuppressWarnings("unchecked")
  private static void stillWaiting(ActorRef<FetchEntity.Command> entity, Copier c) {
    Adapter.toClassic(entity).tell(new Identify(c.peerUrl()), Adapter.toClassic(c.remote()));
    Object next = ((TestProbe<Object>) (TestProbe<?>) c.probe()).receiveMessage(Duration.ofSeconds(10));
    ActorIdentity id = assertInstanceOf(ActorIdentity.class, next, c.peerUrl() + " should still be waiting");
    assertEquals(c.peerUrl(), id.correlationId());
  }

  @Test
  void nodesArePointedAtTheEntitysDownloadUpToTheCapThenAtNodesStillReceiving(@TempDir Path dir) throws Exception {
    ArtifactKey key = ArtifactKey.of("r", URL);
    ActorRef<FetchEntity.Command> entity = entity(dir, key, new FanOut(true, 2, Duration.ofSeconds(1)));
    Copier b = copier(B);
    Copier c = copier(C);
    Copier d = copier(D);
    Copier f = copier(F);
    entity.tell(join(key, b));
    Pointed toB = pointed(b);
    assertEquals(E, toB.peerUrl(), "the first copy reads the entity's own download");
    assertTrue(toB.downloadId() >= 0);
    entity.tell(join(key, c));
    assertEquals(new Pointed(E, toB.downloadId(), List.of()), pointed(c));
    // E has its cap of uploads, and no other node can serve yet: D, F and G wait.
    Copier g = copier(G);
    entity.tell(join(key, d));
    entity.tell(join(key, f));
    entity.tell(join(key, g));
    stillWaiting(entity, d);
    stillWaiting(entity, f);
    stillWaiting(entity, g);

    // B's copy has its headers: B is a source, and the first two waiting nodes read B's copy.
    entity.tell(new FetchEntity.Copying(B, 11));
    assertEquals(new Pointed(B, 11, List.of(E)), pointed(d), "the next node reads B's copy, E to resume from");
    assertEquals(new Pointed(B, 11, List.of(E)), pointed(f));
    stillWaiting(entity, g);
    entity.tell(new FetchEntity.Copying(C, 12));
    assertEquals(new Pointed(C, 12, List.of(B, E)), pointed(g));

    // A node whose copy ended frees its source's slot and is no source any more.
    entity.tell(new FetchEntity.CopyEnded(D, "FAILED"));
    entity.tell(join(key, d));
    assertEquals(B, pointed(d).peerUrl(), "B and C serve one each (E two): B's copy began first");
  }

  @Test
  void aWaitingNodeWaitsForCopiesOnTheirWayThenPastTheBoundGoesToTheEntitysNode(@TempDir Path dir) throws Exception {
    ArtifactKey key = ArtifactKey.of("r", URL);
    ActorRef<FetchEntity.Command> entity = entity(dir, key, new FanOut(true, 1, Duration.ofSeconds(1)));
    Copier b = copier(B);
    Copier c = copier(C);
    Copier d = copier(D);
    entity.tell(join(key, b));
    long download = pointed(b).downloadId();
    entity.tell(join(key, c));
    stillWaiting(entity, c); // and its wait, in the node's time, has begun
    // Past the bound, but B's copy is on its way to becoming a source: C keeps waiting for it.
    ticker.advance(Duration.ofSeconds(2));
    stillWaiting(entity, c);
    entity.tell(new FetchEntity.Copying(B, 11));
    assertEquals(B, pointed(c).peerUrl());
    entity.tell(new FetchEntity.Copying(C, 12));

    // B and C leave the cluster: no source has a free slot and no copy is on its way. D waits
    // for the bound, in the node's time, then reads from E whatever E's load.
    gone.add(B);
    gone.add(C);
    entity.tell(join(key, d));
    stillWaiting(entity, d);
    ticker.advance(Duration.ofMillis(900));
    stillWaiting(entity, d);
    ticker.advance(Duration.ofMillis(200));
    assertEquals(new Pointed(E, download, List.of()), pointed(d));
  }

  @Test
  void aCopyThatNeverAnnouncesItselfHoldsTheWaitingNodesOnlyForAWhile(@TempDir Path dir) throws Exception {
    // B is pointed at E and its Copying is lost: C waits past the bound while B may still come,
    // then reads from E, whatever E's load.
    ArtifactKey key = ArtifactKey.of("r", URL);
    ActorRef<FetchEntity.Command> entity = entity(dir, key, new FanOut(true, 1, Duration.ofSeconds(1)));
    Copier b = copier(B);
    Copier c = copier(C);
    entity.tell(join(key, b));
    long download = pointed(b).downloadId();
    entity.tell(join(key, c));
    stillWaiting(entity, c);
    ticker.advance(Duration.ofSeconds(2));
    stillWaiting(entity, c);
    ticker.advance(FetchEntity.ON_ITS_WAY_PATIENCE.minusSeconds(2).plusMillis(100));
    assertEquals(new Pointed(E, download, List.of()), pointed(c));
  }

  @Test
  void anUploadNotSeenToEndFreesItsSlotWhenItsLeaseRunsOut(@TempDir Path dir) throws Exception {
    // B's copy was pointed at E, announced, and then B went silent (its Holding or CopyEnded lost):
    // the lease frees E's slot for C, long before C's wait bound.
    ArtifactKey key = ArtifactKey.of("r", URL);
    ActorRef<FetchEntity.Command> entity = entity(dir, key, new FanOut(true, 1, Duration.ofMinutes(10)));
    Copier b = copier(B);
    Copier c = copier(C);
    entity.tell(join(key, b));
    long download = pointed(b).downloadId();
    entity.tell(new FetchEntity.Copying(B, 11));
    gone.add(B);
    entity.tell(join(key, c));
    stillWaiting(entity, c);
    ticker.advance(FetchEntity.LEASE_MIN.minusSeconds(1));
    stillWaiting(entity, c);
    ticker.advance(Duration.ofSeconds(2));
    assertEquals(new Pointed(E, download, List.of()), pointed(c));
  }

  @Test
  void anIdleEntityDoesNotPassivateWhileAnUploadItPointedAtIsOpen(@TempDir Path dir) throws Exception {
    // L1: an idle entity passivates, but the uploads it pointed nodes at (and so its sources'
    // slots) live in it alone: it stays until they end. Its idle timeout (a receive timeout) runs
    // on Pekko's ManualTime, in an actor system of its own: it passes only when the test says.
    ActorTestKit manual = ActorTestKit.create("FanOutEntityManualTime", ManualTime.config().withFallback(remote()));
    try {
      ManualTime time = ManualTime.get(manual.system());
      Duration idle = Duration.ofSeconds(30);
      ArtifactKey key = ArtifactKey.of("r", URL);
      CompletableFuture<ByteString> rest = new CompletableFuture<>();
      TestProbe<Object> shard = manual.createTestProbe();
      ActorRef<FetchEntity.Command> entity = entity(manual, dir, key, new FanOut(true, 2, Duration.ofSeconds(1)),
          rest, idle, shard.ref().narrow());
      Copier b = copier(B, manual);
      entity.tell(join(key, b));
      assertEquals(E, pointed(b).peerUrl());
      rest.complete(EntityTestBase.bytes(SIZE, 17).drop(1000)); // the fetch ends: the entity is idle
      fetchEnded(manual, entity, key);

      for (int i = 0; i < 3; i++) {
        time.timePasses(idle); // an idle timeout, B's upload still open
        assertEquals(List.of(), toShardSoFar(entity, shard), "passivated while B's upload is open");
      }

      entity.tell(new FetchEntity.CopyEnded(B, "FAILED"));
      assertEquals(List.of(), toShardSoFar(entity, shard), "passivated before its idle timeout");
      time.timePasses(idle);
      List<Object> sent = toShardSoFar(entity, shard);
      assertEquals(1, sent.size(), "one message to the shard: " + sent);
      assertEquals(entity, assertInstanceOf(ClusterSharding.Passivate.class, sent.get(0)).entity());
    } finally {
      manual.shutdownTestKit();
    }
  }

  /**
   * Returns once the entity's fetch of {@code key} has ended and the entity is idle, its idle
   * timeout counted from now: a Join of a waiter on the entity's own node is answered from the
   * store (a hit), no longer from the running download.
   */
  private void fetchEnded(ActorTestKit at, ActorRef<FetchEntity.Command> entity, ArtifactKey key) {
    TestProbe<Reply> local = at.createTestProbe();
    local.awaitAssert(Duration.ofSeconds(10), () -> {
      entity.tell(new FetchEntity.Join(key, tokens.incrementAndGet(), local.ref()));
      Reply r = local.receiveMessage(Duration.ofSeconds(10));
      assertEquals(Via.HIT, assertInstanceOf(Reply.Stored.class, r).via());
      return null;
    });
  }

  /**
   * What the entity has sent its shard so far, once it has handled every message sent to it
   * before (as LifecycleTest's): a classic {@code Identify} sent on the shard's behalf is answered
   * after those messages and does not count as activity for the idle timeout.
   */
  private static List<Object> toShardSoFar(ActorRef<FetchEntity.Command> entity, TestProbe<Object> shard) {
    Adapter.toClassic(entity).tell(new Identify("barrier"), Adapter.toClassic(shard.ref()));
    List<Object> sent = new java.util.ArrayList<>();
    while (true) {
      Object m = shard.receiveMessage(Duration.ofSeconds(10));
      if (m instanceof ActorIdentity) {
        return sent;
      }
      sent.add(m);
    }
  }

  @Test
  void withFanOutOffEveryNodeReadsTheEntitysNode(@TempDir Path dir) throws Exception {
    ArtifactKey key = ArtifactKey.of("r", URL);
    ActorRef<FetchEntity.Command> entity = entity(dir, key, FanOut.OFF);
    for (String peer : List.of(B, C, D, F)) {
      Copier x = copier(peer);
      entity.tell(join(key, x));
      x.probe().expectMessageClass(FromOwner.class, Duration.ofSeconds(10));
      entity.tell(new FetchEntity.Copying(peer, 20));
    }
  }
}
