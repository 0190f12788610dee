package dev.corral.core.download;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Upstream;
import java.time.Clock;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * This node's downloads: what a {@link Download} writes into (the store, the hot blobs) and reads
 * from (the upstream), and the large bodies still downloading, by download id. A waiter told to
 * stream download N finds it here; once the download has ended it is gone, and the waiter serves
 * the committed bytes from the store instead (or answers 502 when nothing was committed).
 */
public final class Downloads {
  private final ConcurrentHashMap<Long, GrowingBlob> running = new ConcurrentHashMap<>();
  private final ArtifactStore store;
  private final HotBlobs hot;
  private final Upstream upstream;
  private final Clock clock;
  private final Executor io;
  /** Set once by the wiring, before the node serves (its implementation reads through the cache). */
  private volatile FetchSources sources = FetchSources.AS_KEYED;

  /**
   * @param clock wall-clock time, the store's: a 304 stamps the revalidated copy with it
   * @param io an executor for blocking file work
   */
  public Downloads(ArtifactStore store, HotBlobs hot, Upstream upstream, Clock clock, Executor io) {
    this.store = store;
    this.hot = hot;
    this.upstream = upstream;
    this.clock = clock;
    this.io = io;
  }

  /** Starts a download (see {@link Download#start}) that stores what it fetches. */
  public Download start(ArtifactKey key, long inlineLimit, StoredArtifact revalidating, ActorSystem<?> system,
      Download.Origin origin, Consumer<Outcome.Streaming> onStreaming, Consumer<Outcome> onDone) {
    return start(key, inlineLimit, revalidating, false, system, origin, onStreaming, onDone);
  }

  /**
   * Starts a download (see {@link Download#start}); {@code honourNoStore}: a body the upstream
   * says {@code no-store} or {@code private} of is answered, not stored.
   */
  public Download start(ArtifactKey key, long inlineLimit, StoredArtifact revalidating, boolean honourNoStore,
      ActorSystem<?> system, Download.Origin origin, Consumer<Outcome.Streaming> onStreaming,
      Consumer<Outcome> onDone) {
    return Download.start(this, key, inlineLimit, revalidating, honourNoStore, system, origin, onStreaming, onDone);
  }

  /**
   * What every upstream download of this node asks before it starts (see {@link FetchSources});
   * {@link FetchSources#AS_KEYED} until set.
   */
  public void use(FetchSources sources) {
    this.sources = java.util.Objects.requireNonNull(sources, "sources");
  }

  /** What a fetch of a key asks and verifies against; a bypass fetch asks it too (B1). */
  public FetchSources sources() {
    return sources;
  }

  ArtifactStore store() {
    return store;
  }

  HotBlobs hot() {
    return hot;
  }

  Upstream upstream() {
    return upstream;
  }

  Clock clock() {
    return clock;
  }

  Executor io() {
    return io;
  }
  /**
   * A new download id: random, not sequential, so that the peer endpoint's
   * {@code /-/peer/downloads/<id>} cannot be walked to read what other clients are downloading.
   * (Below 10^18, the endpoint's 18 digits.)
   */
  long nextId() {
    return java.util.concurrent.ThreadLocalRandom.current().nextLong(1, 1_000_000_000_000_000_000L);
  }

  void put(long id, GrowingBlob blob) {
    running.put(id, blob);
  }

  void remove(long id) {
    running.remove(id);
  }

  public Optional<GrowingBlob> find(long id) {
    return Optional.ofNullable(running.get(id));
  }

  /** References held on the running downloads: one per download (its writer) plus one per reader. */
  public int references() {
    return running.values().stream().mapToInt(GrowingBlob::references).sum();
  }
}
