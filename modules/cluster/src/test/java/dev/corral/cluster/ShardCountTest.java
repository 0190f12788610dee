package dev.corral.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.JoinSeedNodes;
import org.junit.jupiter.api.Test;

/**
 * {@code --shards} must be the same on every node: a key's shard is its hash modulo the number,
 * and two numbers would give one key two entities (F1). A node with another number is refused
 * when it joins (Pekko's typed sharding checks the number on every join through the seed node
 * process, which --seed-nodes and Cluster Bootstrap use).
 */
class ShardCountTest {

  private static ClusterSettings settings(int shards) {
    return new ClusterSettings("127.0.0.1", 0, List.of(), ClusterSettings.Discovery.NONE, Optional.empty(),
        "127.0.0.1", OptionalInt.empty(), Optional.empty(), false, 0, shards, dev.corral.core.fetch.FanOut.DEFAULT);
  }

  private static Config nodeConfig(int shards) {
    return ConfigFactory.parseString("""
        pekko.actor.provider = cluster
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.coordinated-shutdown.exit-jvm = off
        pekko.coordinated-shutdown.terminate-actor-system = on
        """).withFallback(ClusterJoin.pekkoConfig(settings(shards))).withFallback(ConfigFactory.load()).resolve();
  }

  @Test
  void theSettingIsPekkosShardCount() {
    assertEquals(64, nodeConfig(64).getInt("pekko.cluster.sharding.number-of-shards"));
  }

  @Test
  void aNodeWithAnotherShardCountIsRefusedWhenItJoinsAndOneWithTheSameIsNot() throws Exception {
    ActorTestKit first = ActorTestKit.create("ShardCountTest", nodeConfig(100));
    ActorTestKit other = ActorTestKit.create("ShardCountTest", nodeConfig(50));
    ActorTestKit same = ActorTestKit.create("ShardCountTest", nodeConfig(100));
    try {
      Cluster a = Cluster.get(first.system());
      a.manager().tell(Join.create(a.selfMember().address()));
      TestProbe<Object> probe = first.createTestProbe();
      probe.awaitAssert(Duration.ofSeconds(20), () -> {
        assertEquals(MemberStatus.up(), a.selfMember().status());
        return null;
      });

      // As --seed-nodes and Cluster Bootstrap join: the seed node process, which runs the checks.
      Cluster.get(other.system()).manager().tell(new JoinSeedNodes(List.of(a.selfMember().address())));
      // Refused: the joining node is told its configuration is incompatible and shuts down.
      other.system().getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);

      Cluster.get(same.system()).manager().tell(new JoinSeedNodes(List.of(a.selfMember().address())));
      probe.awaitAssert(Duration.ofSeconds(20), () -> {
        assertEquals(2, a.state().getMembers().spliterator().estimateSize());
        return null;
      });
      a.state().getMembers().forEach(m -> assertTrue(
          m.address().equals(a.selfMember().address())
              || m.address().equals(Cluster.get(same.system()).selfMember().address()),
          "only the nodes with the same shard count are members: " + m));
    } finally {
      same.shutdownTestKit();
      other.shutdownTestKit();
      first.shutdownTestKit();
    }
  }
}
