package dev.corral.core.record;

import dev.corral.core.record.Record;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.Optional;
import java.util.function.BiFunction;
import java.util.function.UnaryOperator;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializer;
import org.apache.pekko.serialization.Serializers;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persisted record of each key (Pekko Persistence durable state: one row per key, what is
 * cached for it), written by its fetch entity after every fetch and purge.
 *
 * <p>The record is written off the request path and never read on it: a new entity does not wait
 * for a database read before its first {@code Join} (that read cost about 10 ms per new key), and
 * a database that is down only delays records, never answers. The current revision is read once,
 * before an entity's first write, unless the entity has just read it for another reason ({@link
 * Writer#seen}) or knows the key to be new to it ({@link Writer#assumeNew}).
 */
public final class KeyRecords {
  private static final Logger log = LoggerFactory.getLogger(KeyRecords.class);

  private final DurableStateUpdateStore<Record> store;

  public KeyRecords(DurableStateUpdateStore<Record> store) {
    this.store = store;
  }

  /** The records in the system's configured durable state plugin ({@code pekko.persistence.state.plugin}). */
  @SuppressWarnings("unchecked")
  public static KeyRecords of(ActorSystem<?> system) {
    return new KeyRecords(DurableStateStoreRegistry.get(system)
        .getDurableStateStoreFor(DurableStateUpdateStore.class, ""));
  }

  /**
   * Serializes a made-up record and reads it back with the system's serialization (the journal's
   * and Artery's), in memory: Jackson builds its serializers for a type on first use, which would
   * otherwise fall on a node's first fetch, while its clients wait. Writes nothing. Returns the
   * record read back (equal to {@link #WARM_UP_RECORD} when the round trip loses nothing).
   */
  public static Record warmUp(ActorSystem<?> system) {
    Serialization serialization = SerializationExtension.get(system);
    Record record = WARM_UP_RECORD;
    Serializer serializer = serialization.findSerializerFor(record);
    byte[] bytes = serialization.serialize(record).get();
    return (Record) serialization.deserialize(bytes, serializer.identifier(),
        Serializers.manifestFor(serializer, record)).get();
  }

  /** The made-up record of {@link #warmUp}: every field set, none at its default. */
  static final Record WARM_UP_RECORD = new Record(new StoredArtifact("0".repeat(64), "warm-up", "0".repeat(64), 1,
      List.of(new Header("Content-Type", "application/octet-stream")), 1), List.of("http://127.0.0.1:1"), 1);

  /** The last record written for a persistence id, if any. */
  public CompletionStage<GetObjectResult<Record>> read(String persistenceId) {
    return store.getObject(persistenceId);
  }

  public Writer writer(String persistenceId) {
    return new Writer(persistenceId);
  }

  /** How many times one change is tried before it is given up (logged as an error). */
  public static final int MAX_TRIES = 5;

  /** The pause before the first retry of a failed write; it doubles with each further try. */
  public static final Duration FIRST_RETRY = Duration.ofMillis(200);

  /**
   * One entity's writes: at most one in flight, the newest changes queued behind it. Used only from
   * its entity's thread; completions come back to the entity as messages. A change is a function
   * of the current record (read once, with its revision, before the first write; the entity is the
   * only writer of its key), so that the replica directory's updates never lose each other.
   *
   * <p>A failed write is not lost: its change goes back in front of the queue and is tried again
   * after a pause ({@link #written} says how long; the entity schedules {@link #retry}), against
   * the record read afresh, up to {@link #MAX_TRIES} times.
   *
   * <p>A key new to this node is written without a read first: revision 1 is inserted as if no
   * record existed. Inserting fails when one does exist (the table's key is the persistence id);
   * the change is then tried again at once against the record read, and that attempt is not
   * counted as a failure. That saves a database read per miss of a new key (about a tenth of a
   * miss's CPU on one node with H2, issue 14).
   */
  public final class Writer {
    private final String persistenceId;
    private long revision = -1; // unknown until read
    private volatile Record current; // the record at that revision (or being written over it)
    private boolean writing;
    private boolean retryDue;
    private boolean assumeAbsent; // the next write inserts revision 1 without reading
    private boolean guessing; // the write in flight is such an insert
    private int failures;
    private UnaryOperator<Record> inFlight;
    private UnaryOperator<Record> pending;

    private Writer(String persistenceId) {
      this.persistenceId = persistenceId;
    }

    /**
     * The record as this writer last knew it (read, or last written or being written), null when
     * it has not been read since the entity started or since a write failed. A hint, never read
     * from the database: which other nodes hold the bytes, as far as this entity has heard.
     */
    public Record known() {
      return current;
    }

    /**
     * The entity takes the key to be new (a miss of a key this node does not hold, with no reason to
     * think another node wrote its record): the next write, if the revision is still unknown by
     * then, inserts revision 1 without reading first. Being wrong costs one failed insert.
     */
    public void assumeNew() {
      if (revision < 0 && !writing()) {
        assumeAbsent = true;
      }
    }

    /**
     * The entity read the record for another reason (the replica directory, a purge): the next
     * write need not read it again. Ignored while a write is in flight or due, whose outcome is
     * newer. A read older than what was written since only costs the next write one failed try.
     */
    public void seen(GetObjectResult<Record> got) {
      if (revision < 0 && !writing()) {
        revision = got.revision();
        current = got.value().orElse(null);
        assumeAbsent = false;
      }
    }

    /** A write is in flight or waits for its retry. */
    public boolean writing() {
      return writing || retryDue;
    }

    public <M> void write(Record record, ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      update(r -> record, self, done);
    }

    /** Queues a change of the record; it is written after the write in flight, if any. */
    public <M> void update(UnaryOperator<Record> change, ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      UnaryOperator<Record> before = pending;
      pending = before == null ? change : r -> change.apply(before.apply(r));
      if (!writing()) {
        next(self, done);
      }
    }

    /**
     * The write in flight ended. After a failure, the pause after which the entity is to call
     * {@link #retry} (the failed change, then whatever was queued since); empty otherwise, or
     * when the change has failed {@link #MAX_TRIES} times (then it is given up, and logged).
     */
    public <M> Optional<Duration> written(long newRevision, Throwable failure, ActorRef<M> self,
        BiFunction<Long, Throwable, M> done) {
      writing = false;
      UnaryOperator<Record> failed = inFlight;
      inFlight = null;
      boolean guessed = guessing;
      guessing = false;
      if (failure != null) {
        revision = -1; // read it again before the next write
        current = null;
        UnaryOperator<Record> after = pending; // the failed change goes back in front of the queue
        pending = after == null ? failed : r -> after.apply(failed.apply(r));
        if (guessed) {
          // Most likely a record exists after all: read it and try again now, not counted.
          log.debug("the record of {} was not new; reading it: {}", persistenceId, failure.toString());
          next(self, done);
          return Optional.empty();
        }
        failures++;
        if (failures < MAX_TRIES) {
          log.warn("could not write the record of {} (try {} of {}): {}", persistenceId, failures, MAX_TRIES,
              failure.toString());
          retryDue = true;
          return Optional.of(FIRST_RETRY.multipliedBy(1L << (failures - 1)));
        }
        pending = after; // given up: the failed change goes, what was queued since stays
        log.error("gave up writing the record of {} after {} tries: {}", persistenceId, failures, failure.toString());
      } else {
        revision = newRevision;
      }
      failures = 0;
      if (pending != null) {
        next(self, done);
      }
      return Optional.empty();
    }

    /** The pause after a failed write is over: the change is tried again. */
    public <M> void retry(ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      if (!retryDue) {
        return;
      }
      retryDue = false;
      if (pending != null) {
        next(self, done);
      }
    }

    private <M> void next(ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      UnaryOperator<Record> change = pending;
      pending = null;
      inFlight = change;
      writing = true;
      guessing = revision < 0 && assumeAbsent;
      assumeAbsent = false;
      CompletionStage<GetObjectResult<Record>> known = revision >= 0
          ? CompletableFuture.completedFuture(new GetObjectResult<>(Optional.ofNullable(current), revision))
          : guessing ? CompletableFuture.completedFuture(new GetObjectResult<>(Optional.empty(), 0))
          : store.getObject(persistenceId);
      // Pekko's CompletionStages run every callback given without an executor on the common
      // pool (a thread hop each); these only build a record and send a message, so they run where
      // the database's answer arrives.
      known
          .thenComposeAsync(got -> {
            Record base = got.value().orElse(Record.EMPTY);
            Record record = change.apply(base);
            current = record; // read by the entity's thread only after the write's message
            return store.upsertObject(persistenceId, got.revision() + 1, record, record.tag())
                .thenApplyAsync(d -> got.revision() + 1, Runnable::run);
          }, Runnable::run)
          .whenCompleteAsync((rev, error) -> self.tell(done.apply(rev == null ? -1L : rev, error)), Runnable::run);
    }
  }
}
