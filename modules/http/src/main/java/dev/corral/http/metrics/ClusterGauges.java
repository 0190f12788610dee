package dev.corral.http.metrics;

import dev.corral.core.fetch.FetchEntity;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * The cluster as this node sees it:
 * <ul>
 *   <li>{@code corral_cluster_members{status}}: members by status ({@link #STATUSES}, each shown,
 *       0 when none), read from the node's cluster state at each scrape;
 *   <li>{@code corral_cluster_unreachable_members}: members this node's failure detector marks
 *       unreachable;
 *   <li>{@code corral_cluster_shards}, {@code corral_cluster_entities}: the fetch entities' shards
 *       and running entities on this node, asked of the shard region before each scrape
 *       ({@link #refresh}, at most {@link #ASK} long); absent when it did not answer in time.
 * </ul>
 */
public final class ClusterGauges {
  /** Pekko's member statuses as labels. */
  static final String[] STATUSES = {
      "joining", "weakly-up", "up", "preparing-for-shutdown", "ready-for-shutdown", "leaving", "exiting", "down",
      "removed"};
  static final Duration ASK = Duration.ofSeconds(1);

  private final ActorSystem<?> system;
  private volatile ShardRegion.CurrentShardRegionState region;

  private ClusterGauges(ActorSystem<?> system) {
    this.system = system;
  }

  /** Registers the gauges and asks the shard region before each of {@code metrics}' scrapes. */
  public static void register(Metrics metrics, ActorSystem<?> system) {
    ClusterGauges gauges = new ClusterGauges(system);
    PrometheusRegistry registry = metrics.registry();
    GaugeWithCallback.builder()
        .name("corral_cluster_members")
        .help("Cluster members as this node sees them, by status")
        .labelNames("status")
        .callback(cb -> {
          int[] counts = new int[STATUSES.length];
          for (Member m : Cluster.get(system).state().getMembers()) {
            int i = indexOf(label(m));
            if (i >= 0) {
              counts[i]++;
            }
          }
          for (int i = 0; i < STATUSES.length; i++) {
            cb.call(counts[i], STATUSES[i]);
          }
        })
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_cluster_unreachable_members")
        .help("Cluster members this node's failure detector marks unreachable")
        .callback(cb -> cb.call(Cluster.get(system).state().getUnreachable().size()))
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_cluster_shards")
        .help("Shards of the fetch entities hosted on this node")
        .callback(cb -> {
          ShardRegion.CurrentShardRegionState r = gauges.region;
          if (r != null) {
            cb.call(r.getShards().size());
          }
        })
        .register(registry);
    GaugeWithCallback.builder()
        .name("corral_cluster_entities")
        .help("Fetch entities running on this node")
        .callback(cb -> {
          ShardRegion.CurrentShardRegionState r = gauges.region;
          if (r != null) {
            cb.call(r.getShards().stream().mapToInt(s -> s.getEntityIds().size()).sum());
          }
        })
        .register(registry);
    metrics.beforeScrape(gauges::refresh);
  }

  /** Asks the shard region for its state; completes (never fails) within {@link #ASK}. */
  CompletionStage<Void> refresh() {
    CompletionStage<ShardRegion.CurrentShardRegionState> asked = AskPattern.ask(
        ClusterSharding.get(system).shardState(),
        replyTo -> new GetShardRegionState(FetchEntity.TYPE_KEY, replyTo), ASK, system.scheduler());
    return asked.handle((state, e) -> {
      region = state; // null when it did not answer: no shard counts this scrape
      return null;
    });
  }

  private static String label(Member m) {
    // WeaklyUp -> weakly-up
    return m.status().toString().replaceAll("([a-z])([A-Z])", "$1-$2").toLowerCase(Locale.ROOT);
  }

  private static int indexOf(String status) {
    for (int i = 0; i < STATUSES.length; i++) {
      if (STATUSES[i].equals(status)) {
        return i;
      }
    }
    return -1;
  }
}
