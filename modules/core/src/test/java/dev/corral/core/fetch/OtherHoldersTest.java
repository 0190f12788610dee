package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.Record;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 13 item 4: resume after a break may come from any holder, not only the one named. The
 * entity's answer to a waiter on another node names the other live holders it knows of the same
 * committed bytes (from its record as last read or written: a hit reads nothing), so the waiter's
 * copy can resume from them. The waiter is a probe in a second actor system, reached over Artery.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OtherHoldersTest {
  private static final String SELF = "http://127.0.0.1:20001";
  private static final String HOLDER = "http://127.0.0.1:20002";
  private static final String GONE = "http://127.0.0.1:20003";
  private static final String URL = "http://upstream.example/other-holders.bin";
  private static final ByteString BODY = ByteString.fromString("the bytes every holder has");

  private static Config remote() {
    return ConfigFactory.parseString("""
        pekko.actor.provider = remote
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        """).withFallback(ConfigFactory.load());
  }

  private final ActorTestKit entityNode = ActorTestKit.create("OtherHoldersEntityNode", remote());
  private final ActorTestKit waiterNode = ActorTestKit.create("OtherHoldersWaiterNode", remote());

  @AfterAll
  void stop() {
    waiterNode.shutdownTestKit();
    entityNode.shutdownTestKit();
  }

  /** What the stand-in {@link Peers} tells a waiter on another node: the holders it was given. */
  public record Told(List<String> alsoHeldBy) implements Reply.ForAnotherNode {}

  /**
   * Records as written: a read gives the last write, or the record the test starts with. Like the
   * database, a write must name the next revision (an insert of revision 1 over a record fails).
   */
  static final class Records implements DurableStateUpdateStore<Record> {
    volatile Record record;
    volatile long revision;
    final ConcurrentLinkedQueue<Record> upserts = new ConcurrentLinkedQueue<>();

    Records(Record record) {
      this.record = record;
      this.revision = record == null ? 0 : 1;
    }

    @Override
    public CompletionStage<GetObjectResult<Record>> getObject(String persistenceId) {
      return CompletableFuture.completedFuture(new GetObjectResult<>(Optional.ofNullable(record), revision));
    }

    @Override
    public synchronized CompletionStage<Done> upsertObject(String persistenceId, long revision, Record value, String tag) {
      if (revision != this.revision + 1) {
        return CompletableFuture.failedFuture(new IllegalStateException("revision " + revision + " after " + this.revision));
      }
      this.revision = revision;
      record = value;
      upserts.add(value);
      return CompletableFuture.completedFuture(Done.getInstance());
    }

    @Override
    public CompletionStage<Done> deleteObject(String persistenceId) {
      throw new UnsupportedOperationException();
    }

    @Override
    public CompletionStage<Done> deleteObject(String persistenceId, long revision) {
      throw new UnsupportedOperationException();
    }
  }

  /** This node is {@link #SELF}; {@link #GONE} has left the cluster. */
  static final class Holders implements Peers {
    @Override
    public Optional<String> self() {
      return Optional.of(SELF);
    }

    @Override
    public boolean othersMayHold() {
      return false; // the test's fetch goes to the upstream
    }

    @Override
    public List<String> live(List<String> holders) {
      return holders.stream().filter(h -> !h.equals(GONE)).toList();
    }

    @Override
    public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
      return new Told(alsoHeldBy);
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

  @Test
  void aHitForAWaiterOnAnotherNodeNamesTheOtherLiveHoldersOfTheSameBytes(@TempDir Path dir) throws Exception {
    ArtifactKey key = ArtifactKey.of("r", URL);
    String sha = Sha256.hex(BODY);
    StoredArtifact elsewhere = new StoredArtifact(key.id(), key.toString(), sha, BODY.size(), List.of(), 1);
    // HOLDER and GONE hold these bytes already.
    Records records = new Records(new Record(elsewhere, List.of(HOLDER, GONE)));
    ScriptedUpstream upstream = new ScriptedUpstream();
    upstream.serve(URL, BODY);
    Clock clock = Clock.systemUTC();
    Node node = new Node(DiskStore.open(dir, 1 << 20, clock), new HotBlobs(0), new KeyRecords(records),
        upstream, new CountingEvents(), r -> FetchPolicy.defaults(),
        com.github.benmanes.caffeine.cache.Ticker.systemTicker(), Timers.system(), clock, Runnable::run,
        new Holders());
    TestProbe<ClusterSharding.ShardCommand> shard = entityNode.createTestProbe();
    ActorRef<FetchEntity.Command> entity = entityNode.spawn(FetchEntity.create(key.id(), node, FetchEntity.IdleTimeout.of(Duration.ofHours(1)), shard.ref()));

    // Fetched on the entity's node: committed, and its record written with this node added.
    TestProbe<Reply> local = entityNode.createTestProbe();
    entity.tell(new FetchEntity.Join(key, 1, local.ref()));
    local.expectMessageClass(Reply.Body.class);
    local.awaitAssert(() -> {
      assertEquals(List.of(HOLDER, GONE, SELF), records.record.holders());
      return null;
    });

    // A waiter on another node: its reply names HOLDER, neither this node nor the one gone.
    TestProbe<Reply> waiter = waiterNode.createTestProbe();
    ActorRef<Reply> remoteWaiter = ActorRefResolver.get(entityNode.system())
        .resolveActorRef(ActorRefResolver.get(waiterNode.system()).toSerializationFormat(waiter.ref()));
    entity.tell(new FetchEntity.Join(key, 2, remoteWaiter));
    assertEquals(new Told(List.of(HOLDER)), waiter.expectMessageClass(Told.class));

    // Once the record says HOLDER dropped its copy, it is no longer named.
    entity.tell(new FetchEntity.Dropped(HOLDER));
    local.awaitAssert(() -> {
      assertEquals(List.of(GONE, SELF), records.record.holders());
      return null;
    });
    entity.tell(new FetchEntity.Join(key, 3, remoteWaiter));
    assertEquals(new Told(List.of()), waiter.expectMessageClass(Told.class));
  }
}
