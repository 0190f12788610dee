package dev.corral.server;

import com.github.benmanes.caffeine.cache.Scheduler;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.StoredArtifact;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cleanup policy {@code max-age-unused}: keys of a repository that no request used (served,
 * fetched or revalidated) for that long are removed from this node's store, beside the global size
 * bound, as Nexus cleanup policies remove components not downloaded for N days. Each node cleans
 * its own store (a removed copy leaves the key's record as an evicted one does), in a sweep every
 * {@link #period}, on the node's scheduler.
 *
 * <p>Counts {@code corral_cleanup_removed_total{repo}} and {@code
 * corral_cleanup_removed_bytes_total{repo}}.
 */
final class UnusedCleanup {
  private static final Logger log = LoggerFactory.getLogger(UnusedCleanup.class);

  private final ArtifactStore store;
  private final Map<String, Long> maxUnusedMillis;
  private final long shortestMillis;
  private final Counter removed;
  private final Counter removedBytes;
  private volatile boolean stopped;

  /** Null when no repository has the policy. */
  static UnusedCleanup of(ArtifactStore store, List<RepoSettings> repos, PrometheusRegistry registry) {
    Map<String, Long> ages = new HashMap<>();
    for (RepoSettings r : repos) {
      if (!r.maxAgeUnused().isZero()) {
        ages.put(r.name(), r.maxAgeUnused().toMillis());
      }
    }
    return ages.isEmpty() ? null : new UnusedCleanup(store, ages, registry);
  }

  private UnusedCleanup(ArtifactStore store, Map<String, Long> maxUnusedMillis, PrometheusRegistry registry) {
    this.store = store;
    this.maxUnusedMillis = Map.copyOf(maxUnusedMillis);
    this.shortestMillis = maxUnusedMillis.values().stream().mapToLong(Long::longValue).min().orElseThrow();
    this.removed = Counter.builder().name("corral_cleanup_removed_total")
        .help("Keys removed from this node's store by their repository's max-age-unused")
        .labelNames("repo").register(registry);
    this.removedBytes = Counter.builder().name("corral_cleanup_removed_bytes_total")
        .help("Bytes of the keys removed by their repository's max-age-unused (a blob another key shares stays)")
        .labelNames("repo").register(registry);
    for (String repo : this.maxUnusedMillis.keySet()) {
      removed.labelValues(repo);
      removedBytes.labelValues(repo);
    }
  }

  /** How often the sweep runs: a 24th of the shortest age, between a second and an hour. */
  Duration period() {
    long millis = Math.max(1_000L, Math.min(3_600_000L, shortestMillis / 24));
    return Duration.ofMillis(millis);
  }

  /** One sweep now; returns how many keys went. */
  int sweep() {
    try {
      List<StoredArtifact> gone = store.removeUnused(repo -> maxUnusedMillis.getOrDefault(repo, 0L), shortestMillis);
      for (StoredArtifact a : gone) {
        String repo = a.key().substring(0, Math.max(0, a.key().indexOf('\n')));
        removed.labelValues(repo).inc();
        removedBytes.labelValues(repo).inc(a.size());
      }
      if (!gone.isEmpty()) {
        log.info("max-age-unused: removed {} keys not used within their repository's age", gone.size());
      }
      return gone.size();
    } catch (IOException | RuntimeException e) {
      log.warn("max-age-unused sweep failed (the next one tries again): {}", e.toString());
      return 0;
    }
  }

  /** Sweeps every {@link #period} on {@code scheduler}, the blocking work on {@code io}, until {@link #stop}. */
  void start(Scheduler scheduler, Executor io) {
    long periodMillis = period().toMillis();
    scheduler.schedule(io, () -> {
      if (!stopped) {
        sweep();
        start(scheduler, io);
      }
    }, periodMillis, TimeUnit.MILLISECONDS);
  }

  void stop() {
    stopped = true;
  }
}
