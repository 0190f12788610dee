package dev.corral.core.record;

import dev.corral.core.record.Record;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.store.StoredArtifact;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The key records are written off the request path (SEMANTICS L3: the record is the truth about
 * the key): one write in flight per key, the newest record queued behind it, the revision read
 * once, and a failed write never lost for the next one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KeyRecordsTest {
  private final ActorTestKit kit = ActorTestKit.create("KeyRecordsTest");

  @AfterAll
  void stop() {
    kit.shutdownTestKit();
  }

  record Written(long revision, Throwable failure) {}

  /**
   * The start's warm-up goes through the serializer the journal uses (Java serialization is off),
   * and what it reads back is the record it wrote, every field of it.
   */
  @Test
  void theWarmUpRoundTripsARecordThroughTheSystemsSerialization() {
    Serializer serializer = SerializationExtension.get(kit.system()).findSerializerFor(KeyRecords.WARM_UP_RECORD);
    assertInstanceOf(JacksonCborSerializer.class, serializer, "the records' binding, as the journal's");
    Record back = KeyRecords.warmUp(kit.system());
    assertNotSame(KeyRecords.WARM_UP_RECORD, back, "read back from the bytes, not handed through");
    assertEquals(KeyRecords.WARM_UP_RECORD, back);
  }

  /** A durable state store whose answers the test gives one by one. */
  static final class HeldStore implements DurableStateUpdateStore<Record> {
    final ConcurrentLinkedQueue<CompletableFuture<GetObjectResult<Record>>> reads = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<Object[]> upserts = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<String> tags = new ConcurrentLinkedQueue<>();
    final ConcurrentLinkedQueue<CompletableFuture<Done>> upsertResults = new ConcurrentLinkedQueue<>();

    @Override
    public CompletionStage<GetObjectResult<Record>> getObject(String persistenceId) {
      CompletableFuture<GetObjectResult<Record>> f = new CompletableFuture<>();
      reads.add(f);
      return f;
    }

    @Override
    public CompletionStage<Done> upsertObject(String persistenceId, long revision, Record value, String tag) {
      CompletableFuture<Done> f = new CompletableFuture<>();
      upserts.add(new Object[] {revision, value});
      tags.add(tag);
      upsertResults.add(f);
      return f;
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

  private static Record record(String sha) {
    return new Record(new StoredArtifact("id", "key", sha, 1, List.of(), 0));
  }

  @Test
  void theRevisionIsReadOnceAndWritesFollowIt() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|k");
    TestProbe<Written> self = kit.createTestProbe();

    writer.write(record("a"), self.ref(), Written::new);
    assertTrue(writer.writing());
    store.reads.poll().complete(new GetObjectResult<>(Optional.empty(), 4));
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    assertEquals(5L, store.upserts.poll()[0]);
    store.upsertResults.poll().complete(Done.getInstance());
    Written w = self.receiveMessage();
    writer.written(w.revision(), w.failure(), self.ref(), Written::new);
    assertFalse(writer.writing());

    writer.write(record("b"), self.ref(), Written::new);
    assertTrue(store.reads.isEmpty(), "the known revision is not read again");
    assertEquals(6L, store.upserts.poll()[0]);
  }

  @Test
  void onlyTheNewestRecordQueuedBehindAWriteIsWritten() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|q");
    TestProbe<Written> self = kit.createTestProbe();

    writer.write(record("first"), self.ref(), Written::new);
    writer.write(record("second"), self.ref(), Written::new);
    writer.write(record("third"), self.ref(), Written::new);
    store.reads.poll().complete(new GetObjectResult<>(Optional.empty(), 0));
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    assertEquals("first", ((Record) store.upserts.poll()[1]).cached().sha256());
    store.upsertResults.poll().complete(Done.getInstance());
    Written w = self.receiveMessage();
    writer.written(w.revision(), w.failure(), self.ref(), Written::new);

    Object[] next = store.upserts.poll();
    assertNotNull(next, "the queued record is written when the first write ends");
    assertEquals(2L, next[0]);
    assertEquals("third", ((Record) next[1]).cached().sha256());
    assertNull(store.upserts.poll());
  }

  @Test
  void aFailedWriteIsTriedAgainAfterAPauseAgainstTheRecordReadAfresh() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|f");
    TestProbe<Written> self = kit.createTestProbe();

    writer.write(record("a"), self.ref(), Written::new);
    store.reads.poll().completeExceptionally(new IllegalStateException("database down"));
    Written failed = self.receiveMessage(Duration.ofSeconds(5));
    assertNotNull(failed.failure());
    Optional<Duration> pause = writer.written(failed.revision(), failed.failure(), self.ref(), Written::new);
    assertEquals(Optional.of(KeyRecords.FIRST_RETRY), pause, "the failed change is to be tried again");
    assertTrue(writer.writing(), "a retry is due: the entity must not passivate");

    writer.update(r -> r.holding("http://127.0.0.1:2", "a"), self.ref(), Written::new);
    assertTrue(store.reads.isEmpty(), "nothing is written before the pause is over");
    writer.retry(self.ref(), Written::new);
    assertEquals(1, store.reads.size(), "the revision is read again");
    store.reads.poll().complete(new GetObjectResult<>(Optional.of(record("old")), 7));
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    Object[] retried = store.upserts.poll();
    assertEquals(8L, retried[0]);
    Record r = (Record) retried[1];
    assertEquals("a", r.cached().sha256(), "the failed change is not lost");
    assertEquals(List.of("http://127.0.0.1:2"), r.holders(), "nor is the change queued behind it");
  }

  @Test
  void aWriteThatKeepsFailingIsTriedFiveTimesWithGrowingPausesThenGivenUp() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|g");
    TestProbe<Written> self = kit.createTestProbe();

    writer.write(record("a"), self.ref(), Written::new);
    List<Optional<Duration>> pauses = new java.util.ArrayList<>();
    for (int i = 0; i < KeyRecords.MAX_TRIES; i++) {
      self.awaitAssert(() -> { assertEquals(1, store.reads.size()); return null; });
      store.reads.poll().completeExceptionally(new IllegalStateException("database down"));
      Written failed = self.receiveMessage(Duration.ofSeconds(5));
      Optional<Duration> pause = writer.written(failed.revision(), failed.failure(), self.ref(), Written::new);
      pauses.add(pause);
      pause.ifPresent(p -> writer.retry(self.ref(), Written::new));
    }
    Duration first = KeyRecords.FIRST_RETRY;
    assertEquals(List.of(Optional.of(first), Optional.of(first.multipliedBy(2)), Optional.of(first.multipliedBy(4)),
        Optional.of(first.multipliedBy(8)), Optional.empty()), pauses);
    assertFalse(writer.writing());
    assertTrue(store.reads.isEmpty(), "given up: bounded");
  }

  @Test
  void aPurgedRecordIsWrittenWithThePurgedTagAndKeepsItsPurgeTimeThroughLaterCommits() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|p");
    TestProbe<Written> self = kit.createTestProbe();
    writer.update(r -> r.purged(1234), self.ref(), Written::new);
    store.reads.poll().complete(new GetObjectResult<>(Optional.of(record("old")), 1));
    self.awaitAssert(() -> { assertEquals(1, store.tags.size()); return null; });
    assertEquals(Record.PURGED_TAG, store.tags.poll());
    Record tombstone = (Record) store.upserts.poll()[1];
    assertNull(tombstone.cached());
    assertEquals(1234, tombstone.purgedAtMillis());
    Record later = tombstone.committed(record("new").cached(), "http://127.0.0.1:1");
    assertEquals(1234, later.purgedAtMillis());
    assertEquals(Record.PURGED_TAG, later.tag());
    assertEquals("", record("x").tag());
  }

  @Test
  void aNewKeysFirstWriteInsertsRevisionOneWithoutReading() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|n");
    TestProbe<Written> self = kit.createTestProbe();

    writer.assumeNew();
    writer.write(record("a"), self.ref(), Written::new);
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    assertTrue(store.reads.isEmpty(), "no read before the insert");
    assertEquals(1L, store.upserts.poll()[0]);
    store.upsertResults.poll().complete(Done.getInstance());
    Written w = self.receiveMessage();
    writer.written(w.revision(), w.failure(), self.ref(), Written::new);

    writer.write(record("b"), self.ref(), Written::new);
    assertTrue(store.reads.isEmpty());
    assertEquals(2L, store.upserts.poll()[0], "later writes follow the inserted revision");
  }

  @Test
  void anInsertThatFindsARecordReadsItAndTriesAgainAtOnceWithoutCountingAFailure() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|e");
    TestProbe<Written> self = kit.createTestProbe();

    writer.assumeNew();
    writer.update(r -> r.holding("http://127.0.0.1:3", "a"), self.ref(), Written::new);
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    assertEquals(1L, store.upserts.poll()[0]);
    store.upsertResults.poll().completeExceptionally(new IllegalStateException("unique key violated"));
    Written failed = self.receiveMessage(Duration.ofSeconds(5));
    assertEquals(Optional.empty(), writer.written(failed.revision(), failed.failure(), self.ref(), Written::new),
        "no pause: the record is read at once");
    assertTrue(writer.writing());
    self.awaitAssert(() -> { assertEquals(1, store.reads.size()); return null; });
    store.reads.poll().complete(new GetObjectResult<>(Optional.of(record("a").holding("http://127.0.0.1:1", "a")), 3));
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    Object[] retried = store.upserts.poll();
    assertEquals(4L, retried[0]);
    assertEquals(List.of("http://127.0.0.1:1", "http://127.0.0.1:3"), ((Record) retried[1]).holders(),
        "the change is applied to the record that exists, nothing of it lost");

    // the uncounted try leaves all five tries for real failures
    store.upsertResults.poll().completeExceptionally(new IllegalStateException("database down"));
    Written down = self.receiveMessage(Duration.ofSeconds(5));
    assertEquals(Optional.of(KeyRecords.FIRST_RETRY), writer.written(down.revision(), down.failure(), self.ref(), Written::new));
  }

  @Test
  void aRecordTheEntityReadForAnotherReasonIsNotReadAgainBeforeTheWrite() {
    HeldStore store = new HeldStore();
    KeyRecords.Writer writer = new KeyRecords(store).writer("Fetch|s");
    TestProbe<Written> self = kit.createTestProbe();

    writer.assumeNew();
    writer.seen(new GetObjectResult<>(Optional.of(record("old")), 6));
    writer.update(r -> r.holding("http://127.0.0.1:2", "old"), self.ref(), Written::new);
    self.awaitAssert(() -> { assertEquals(1, store.upserts.size()); return null; });
    assertTrue(store.reads.isEmpty());
    Object[] written = store.upserts.poll();
    assertEquals(7L, written[0], "the revision seen, not an insert");
    assertEquals("old", ((Record) written[1]).cached().sha256());
  }
}
