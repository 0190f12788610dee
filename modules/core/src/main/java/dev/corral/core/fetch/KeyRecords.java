package dev.corral.core.fetch;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.persistence.state.javadsl.DurableStateUpdateStore;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The persisted record of each key (Pekko Persistence durable state: one row per key, what is
 * cached for it), written by its fetch entity after every fetch and purge.
 *
 * <p>The record is written off the request path and never read on it: a new entity does not wait
 * for a database read before its first {@code Join} (that read cost about 10 ms per new key), and
 * a database that is down only delays records, never answers. The current revision is read once,
 * before an entity's first write.
 */
public final class KeyRecords {
  private static final Logger log = LoggerFactory.getLogger(KeyRecords.class);

  private final DurableStateUpdateStore<FetchEntity.Record> store;

  public KeyRecords(DurableStateUpdateStore<FetchEntity.Record> store) {
    this.store = store;
  }

  /** The records in the system's configured durable state plugin ({@code pekko.persistence.state.plugin}). */
  @SuppressWarnings("unchecked")
  public static KeyRecords of(ActorSystem<?> system) {
    return new KeyRecords(DurableStateStoreRegistry.get(system)
        .getDurableStateStoreFor(DurableStateUpdateStore.class, ""));
  }

  /** The last record written for a persistence id, if any. */
  public CompletionStage<GetObjectResult<FetchEntity.Record>> read(String persistenceId) {
    return store.getObject(persistenceId);
  }

  Writer writer(String persistenceId) {
    return new Writer(persistenceId);
  }

  /**
   * One entity's writes: at most one in flight, the newest record queued behind it. Used only from
   * its entity's thread; completions come back to the entity as messages.
   */
  final class Writer {
    private final String persistenceId;
    private long revision = -1; // unknown until read
    private boolean writing;
    private FetchEntity.Record pending;

    private Writer(String persistenceId) {
      this.persistenceId = persistenceId;
    }

    boolean writing() {
      return writing;
    }

    <M> void write(FetchEntity.Record record, ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      pending = record;
      if (!writing) {
        next(self, done);
      }
    }

    <M> void written(long newRevision, Throwable failure, ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      writing = false;
      if (failure != null) {
        revision = -1; // read it again before the next write
        log.warn("could not write the record of {}: {}", persistenceId, failure.toString());
      } else {
        revision = newRevision;
      }
      if (pending != null) {
        next(self, done);
      }
    }

    private <M> void next(ActorRef<M> self, BiFunction<Long, Throwable, M> done) {
      FetchEntity.Record record = pending;
      pending = null;
      writing = true;
      CompletionStage<Long> current = revision >= 0
          ? CompletableFuture.completedFuture(revision)
          : store.getObject(persistenceId).thenApply(GetObjectResult::revision);
      current
          .thenCompose(rev -> store.upsertObject(persistenceId, rev + 1, record, "").thenApply(d -> rev + 1))
          .whenComplete((rev, error) -> self.tell(done.apply(rev == null ? -1L : rev, error)));
    }
  }
}
