package dev.corral.http;

import static dev.corral.http.Answers.text;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.fetch.FetchEntity;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.Member;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetClusterShardingStats;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * {@code GET /-/admin/cluster} (the admin token is checked by {@link AdminRoutes}): the cluster as
 * this node sees it: each member's address, status, roles and reachability, which one is this node
 * and which the leader, and the fetch entities' shards and live entities on each member, from
 * Cluster Sharding's own statistics (asked of every region, within {@link #STATS_TIMEOUT}; a
 * region that did not answer is listed under {@code shardStatsMissing}).
 */
final class AdminCluster {
  static final Duration STATS_TIMEOUT = Duration.ofSeconds(3);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final ActorSystem<?> system;

  AdminCluster(ActorSystem<?> system) {
    this.system = system;
  }

  CompletionStage<HttpResponse> view() {
    CompletionStage<ShardRegion.ClusterShardingStats> stats = AskPattern.ask(
        ClusterSharding.get(system).shardState(),
        replyTo -> new GetClusterShardingStats(FetchEntity.TYPE_KEY, STATS_TIMEOUT, replyTo),
        STATS_TIMEOUT.plusSeconds(1), system.scheduler());
    return stats.handle((s, error) -> respond(error == null ? s : null));
  }

  private HttpResponse respond(ShardRegion.ClusterShardingStats stats) {
    Cluster cluster = Cluster.get(system);
    ClusterEvent.CurrentClusterState state = cluster.state();
    Set<Member> unreachable = new HashSet<>();
    state.getUnreachable().forEach(unreachable::add);
    Map<Address, ShardRegion.ShardRegionStats> regions =
        stats == null ? Map.of() : stats.getRegions();
    List<Map<String, Object>> members = new ArrayList<>();
    for (Member m : state.getMembers()) {
      Map<String, Object> member = new LinkedHashMap<>();
      member.put("address", m.address().toString());
      member.put("status", m.status().toString());
      member.put("roles", new ArrayList<>(m.getRoles()));
      member.put("reachable", !unreachable.contains(m));
      ShardRegion.ShardRegionStats region = regions.get(m.address());
      if (region != null) {
        member.put("shards", region.getStats().size());
        member.put("entities", region.getStats().values().stream().mapToLong(n -> ((Number) n).longValue()).sum());
      }
      members.add(member);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("self", cluster.selfMember().address().toString());
    body.put("leader", state.getLeader() == null ? null : state.getLeader().toString());
    body.put("members", members);
    if (stats == null) {
      body.put("shardStatsMissing", "the sharding statistics did not come within " + STATS_TIMEOUT.toSeconds() + " s");
    } else if (members.stream().anyMatch(m -> !m.containsKey("shards"))) {
      body.put("shardStatsMissing", "some regions did not answer within " + STATS_TIMEOUT.toSeconds() + " s");
    }
    try {
      return HttpResponse.create().withStatus(StatusCodes.OK)
          .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, JSON.writeValueAsBytes(body)));
    } catch (JsonProcessingException e) {
      return text(500, "could not write the cluster view");
    }
  }
}
