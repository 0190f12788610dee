package dev.corral.core.record;

import dev.corral.core.CborSerializable;
import dev.corral.core.store.StoredArtifact;
import java.util.ArrayList;
import java.util.List;

/**
 * The persisted record of a key: what this cluster has cached for it (or null), and the peer
 * URLs of the nodes holding verified copies of those bytes (the replica directory).
 */
public record Record(StoredArtifact cached, List<String> holders) implements CborSerializable {
  public static final Record EMPTY = new Record(null);

  public Record {
    holders = holders == null || cached == null ? List.of() : List.copyOf(holders);
  }

  public Record(StoredArtifact cached) {
    this(cached, List.of());
  }

  /** {@code holder} committed {@code artifact}: other holders stay if they hold the same bytes. */
  public Record committed(StoredArtifact artifact, String holder) {
    List<String> kept = cached != null && cached.sha256().equals(artifact.sha256())
        ? new ArrayList<>(holders) : new ArrayList<>();
    if (holder != null && !kept.contains(holder)) {
      kept.add(holder);
    }
    return new Record(artifact, kept);
  }

  public Record holding(String holder, String sha256) {
    if (cached == null || !cached.sha256().equals(sha256) || holders.contains(holder)) {
      return this;
    }
    List<String> more = new ArrayList<>(holders);
    more.add(holder);
    return new Record(cached, more);
  }

  public Record dropped(String holder) {
    if (!holders.contains(holder)) {
      return this;
    }
    List<String> fewer = new ArrayList<>(holders);
    fewer.remove(holder);
    return new Record(cached, fewer);
  }
}
