package dev.corral.core.record;

import dev.corral.core.CborSerializable;
import dev.corral.core.store.StoredArtifact;
import java.util.ArrayList;
import java.util.List;

/**
 * The persisted record of a key: what this cluster has cached for it (or null), the peer URLs of
 * the nodes holding verified copies of those bytes (the replica directory), and when the key was
 * last purged cluster-wide ({@code purgedAtMillis}, 0: never). The purge time is kept by later
 * commits: a node that was down during a purge drops, when it starts, every local copy it fetched
 * before that time ({@code MissedPurges}), whatever happened to the key since.
 */
public record Record(StoredArtifact cached, List<String> holders, long purgedAtMillis) implements CborSerializable {
  public static final Record EMPTY = new Record(null);

  /** The durable state tag of a record that has been purged at least once (MissedPurges reads it). */
  public static final String PURGED_TAG = "purged";

  public Record {
    holders = holders == null || cached == null ? List.of() : List.copyOf(holders);
  }

  public Record(StoredArtifact cached, List<String> holders) {
    this(cached, holders, 0);
  }

  public Record(StoredArtifact cached) {
    this(cached, List.of());
  }

  /** The tombstone of a cluster-wide purge at {@code atMillis}: nothing cached, nobody holds it. */
  public Record purged(long atMillis) {
    return new Record(null, List.of(), Math.max(atMillis, purgedAtMillis));
  }

  /** Nothing cached any more (gone upstream); the purge time stays. */
  public Record cleared() {
    return new Record(null, List.of(), purgedAtMillis);
  }

  /** The tag this record is written with. */
  public String tag() {
    return purgedAtMillis > 0 ? PURGED_TAG : "";
  }

  /** {@code holder} committed {@code artifact}: other holders stay if they hold the same bytes. */
  public Record committed(StoredArtifact artifact, String holder) {
    List<String> kept = cached != null && cached.sha256().equals(artifact.sha256())
        ? new ArrayList<>(holders) : new ArrayList<>();
    if (holder != null && !kept.contains(holder)) {
      kept.add(holder);
    }
    return new Record(artifact, kept, purgedAtMillis);
  }

  public Record holding(String holder, String sha256) {
    if (cached == null || !cached.sha256().equals(sha256) || holders.contains(holder)) {
      return this;
    }
    List<String> more = new ArrayList<>(holders);
    more.add(holder);
    return new Record(cached, more, purgedAtMillis);
  }

  public Record dropped(String holder) {
    if (!holders.contains(holder)) {
      return this;
    }
    List<String> fewer = new ArrayList<>(holders);
    fewer.remove(holder);
    return new Record(cached, fewer, purgedAtMillis);
  }
}
