package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.stream.Collectors;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.junit.jupiter.api.Test;

/**
 * Registering the fetch entity starts one entity at once, under an id no key has: a node's first
 * shard allocation and entity start then happen as it starts, not on its first client's miss.
 */
class WarmUpEntityTest extends EntityTestBase {
  @Test
  void registeringTheEntityStartsTheWarmUpEntityBeforeAnyMiss() {
    TestProbe<ShardRegion.CurrentShardRegionState> probe = kit.createTestProbe();
    probe.awaitAssert(WAIT, () -> {
      sharding.shardState().tell(new GetShardRegionState(FetchEntity.TYPE_KEY, probe.ref()));
      Set<String> ids = probe.receiveMessage(WAIT).getShards().stream()
          .flatMap(s -> s.getEntityIds().stream()).collect(Collectors.toSet());
      assertTrue(ids.contains(FetchEntity.WARM_UP_ID), ids.toString());
      return null;
    });
    assertFalse(FetchEntity.WARM_UP_ID.matches("[0-9a-f]{64}"), "no key's id (SHA-256 hex)");
  }
}
