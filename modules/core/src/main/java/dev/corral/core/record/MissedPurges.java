package dev.corral.core.record;

import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.StoredArtifact;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.ActorRef;
import org.apache.pekko.actor.PoisonPill;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.query.Offset;
import org.apache.pekko.persistence.query.UpdatedDurableState;
import org.apache.pekko.persistence.query.javadsl.DurableStateStoreQuery;
import org.apache.pekko.persistence.state.DurableStateStoreRegistry;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Purges this node missed while it was down (issue 13 item 2): run once at start, before the front
 * door binds, it reads every record tagged {@value Record#PURGED_TAG} and drops each local copy
 * fetched before its key's last purge ({@link StoredArtifact#fetchedAtMillis()} not after
 * {@link Record#purgedAtMillis()}). A copy fetched since (from the upstream, or from a holder that
 * fetched it since: a replica keeps its holder's fetch time) stays.
 *
 * <p>The times come from different nodes' clocks: a copy fetched within the clock skew after a
 * purge may be dropped too (it is fetched again), never one fetched well before it kept.
 */
public final class MissedPurges {
  private static final Logger log = LoggerFactory.getLogger(MissedPurges.class);
  private static final String PREFIX = "Fetch|";
  /**
   * The actor pekko-persistence-jdbc starts for the first changes query: it then reads every new
   * record row, every {@code query-delay} (200 ms here), for as long as the node runs. This check
   * is the node's only changes query, so the actor is stopped once the check has read the records.
   */
  private static final String SEQUENCE_ACTOR = "/system/pekko-persistence-jdbc-durable-state-sequence-actor";

  private final DurableStateStoreQuery<Record> records;
  private final ArtifactStore store;

  public MissedPurges(DurableStateStoreQuery<Record> records, ArtifactStore store) {
    this.records = records;
    this.store = store;
  }

  /** The records of the system's configured durable state plugin. */
  @SuppressWarnings("unchecked")
  public static MissedPurges of(ActorSystem<?> system, ArtifactStore store) {
    return new MissedPurges(DurableStateStoreRegistry.get(system)
        .getDurableStateStoreFor(DurableStateStoreQuery.class, ""), store);
  }

  /** Drops the local copies purged while this node was down; completes with how many went. */
  public CompletionStage<Integer> drop(ActorSystem<?> system) {
    return records.currentChanges(Record.PURGED_TAG, Offset.noOffset())
        .runWith(Sink.fold(0, (dropped, change) -> {
          if (change instanceof UpdatedDurableState<Record> u && dropIfPurged(u.persistenceId(), u.value())) {
            return dropped + 1;
          }
          return dropped;
        }), system)
        .thenApply(dropped -> {
          if (dropped > 0) {
            log.info("dropped {} local copies purged cluster-wide while this node was down", dropped);
          }
          return dropped;
        })
        .whenComplete((dropped, failed) -> system.classicSystem().actorSelection(SEQUENCE_ACTOR)
            .tell(PoisonPill.getInstance(), ActorRef.noSender()));
  }

  private boolean dropIfPurged(String persistenceId, Record record) throws IOException {
    if (record == null || record.purgedAtMillis() <= 0 || !persistenceId.startsWith(PREFIX)) {
      return false;
    }
    String keyId = persistenceId.substring(PREFIX.length());
    Optional<StoredArtifact> held = store.held(keyId);
    if (held.isEmpty() || held.get().fetchedAtMillis() > record.purgedAtMillis()) {
      return false;
    }
    return store.remove(keyId);
  }
}
