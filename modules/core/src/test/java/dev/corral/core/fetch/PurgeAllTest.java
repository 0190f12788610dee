package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.corral.core.download.Outcome;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.Record;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Upstream;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The key's entity purges it cluster-wide ({@link FetchEntity.PurgeAll}): it tombstones the record
 * under the {@code purged} tag, asks every listed holder but the one that took the request, and
 * counts what went and who could not be asked; a record it cannot read is said so (503).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PurgeAllTest {
  private static final String A = "http://127.0.0.1:20001";
  private static final String B = "http://127.0.0.1:20002";
  private static final String C = "http://127.0.0.1:20003";
  private static final long NOW = 1_700_000_000_000L;
  private final ActorTestKit kit = ActorTestKit.create("PurgeAllTest");

  @AfterAll
  void stop() {
    kit.shutdownTestKit();
  }

  /** Records answered as the test says: a read that fails, or the record given. */
  static final class Records implements DurableStateUpdateStore<Record> {
    final Record record; // null: every read fails
    final ConcurrentLinkedQueue<Object[]> upserts = new ConcurrentLinkedQueue<>();

    Records(Record record) {
      this.record = record;
    }

    @Override
    public CompletionStage<GetObjectResult<Record>> getObject(String persistenceId) {
      return record == null ? CompletableFuture.failedFuture(new IllegalStateException("database down"))
          : CompletableFuture.completedFuture(new GetObjectResult<>(Optional.of(record), 3));
    }

    @Override
    public CompletionStage<Done> upsertObject(String persistenceId, long revision, Record value, String tag) {
      upserts.add(new Object[] {value, tag});
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

  /** Holders that answer as the test says: true (held), false (not held), or absent: unreachable. */
  static final class Holders implements Peers {
    final Map<String, Boolean> answers;
    final Map<String, String> asked = new ConcurrentHashMap<>();

    Holders(Map<String, Boolean> answers) {
      this.answers = answers;
    }

    @Override
    public CompletionStage<Boolean> dropCopy(String holder, String keyId) {
      asked.put(holder, keyId);
      Boolean held = answers.get(holder);
      return held == null ? CompletableFuture.failedFuture(new java.net.ConnectException("refused"))
          : CompletableFuture.completedFuture(held);
    }

    @Override
    public Optional<String> self() {
      return Optional.of(B);
    }

    @Override
    public boolean othersMayHold() {
      return true;
    }

    @Override
    public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
      return new Reply.Retry("test");
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

  private ActorRef<FetchEntity.Command> entity(Path dir, String id, Records records, Peers peers) throws Exception {
    Clock clock = Clock.fixed(Instant.ofEpochMilli(NOW), ZoneOffset.UTC);
    Node node = new Node(DiskStore.open(dir, 1 << 20, clock), new HotBlobs(0), new KeyRecords(records),
        new ScriptedUpstream(), new CountingEvents(), r -> FetchPolicy.defaults(),
        com.github.benmanes.caffeine.cache.Ticker.systemTicker(), Timers.system(), clock,
        Runnable::run, peers);
    TestProbe<ClusterSharding.ShardCommand> shard = kit.createTestProbe();
    return kit.spawn(FetchEntity.create(id, node, FetchEntity.IdleTimeout.of(Duration.ofHours(1)), shard.ref()));
  }

  @Test
  void everyListedHolderButThePurgingNodeIsAskedAndTheRecordBecomesATaggedTombstone(@TempDir Path dir)
      throws Exception {
    StoredArtifact a = new StoredArtifact("k", "key", "a".repeat(64), 3, List.of(), 1);
    Records records = new Records(new Record(a, List.of(A, B, C)));
    Holders holders = new Holders(Map.of(A, true)); // C cannot be reached
    ActorRef<FetchEntity.Command> entity = entity(dir, "e".repeat(64), records, holders);
    TestProbe<FetchEntity.Purged> reply = kit.createTestProbe();
    entity.tell(new FetchEntity.PurgeAll(B, reply.ref()));
    assertEquals(new FetchEntity.Purged(1, 1, false, true), reply.receiveMessage());
    assertEquals(Map.of(A, "e".repeat(64), C, "e".repeat(64)), holders.asked, "B took the request and is not asked");
    reply.awaitAssert(() -> {
      assertEquals(1, records.upserts.size());
      return null;
    });
    Object[] written = records.upserts.poll();
    Record tombstone = (Record) written[0];
    assertNull(tombstone.cached());
    assertEquals(List.of(), tombstone.holders());
    assertEquals(NOW, tombstone.purgedAtMillis());
    assertEquals(Record.PURGED_TAG, written[1]);
  }

  @Test
  void aRecordThatCannotBeReadIsSaidSo(@TempDir Path dir) throws Exception {
    ActorRef<FetchEntity.Command> entity = entity(dir, "f".repeat(64), new Records(null), new Holders(Map.of()));
    TestProbe<FetchEntity.Purged> reply = kit.createTestProbe();
    entity.tell(new FetchEntity.PurgeAll(B, reply.ref()));
    assertEquals(new FetchEntity.Purged(0, 0, false, false), reply.receiveMessage());
  }
}
