package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.*;

import com.github.benmanes.caffeine.cache.Ticker;
import com.typesafe.config.ConfigFactory;
import dev.corral.core.ArtifactKey;
import dev.corral.core.CancelRegistry;
import dev.corral.core.Metrics;
import dev.corral.core.store.DiskStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.persistence.testkit.PersistenceTestKitDurableStateStorePlugin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EntitySmokeTest {
  ActorTestKit kit;
  ScriptedUpstream upstream = new ScriptedUpstream();
  Waiters waiters;
  Node node;

  @BeforeAll
  void start() throws Exception {
    kit = ActorTestKit.create("smoke", ConfigFactory.parseString("""
        pekko.actor.provider = cluster
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.cluster.sharding.passivation.strategy = none
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.actor.serialization-bindings { "dev.corral.core.CborSerializable" = jackson-cbor }
        """).withFallback(PersistenceTestKitDurableStateStorePlugin.getInstance().config())
        .withFallback(ConfigFactory.load()));
    Cluster c = Cluster.get(kit.system());
    c.manager().tell(Join.create(c.selfMember().address()));
    Path dir = Files.createTempDirectory("smoke");
    node = new Node(DiskStore.open(dir, 1L << 30, Clock.systemUTC()), upstream, new Metrics(),
        r -> FetchPolicy.defaults(), Ticker.systemTicker(), kit.system().dispatchers().lookup(DispatcherSelector.blocking()));
    FetchEntity.init(kit.system(), node, Duration.ofSeconds(30));
    waiters = new Waiters(ClusterSharding.get(kit.system()), CancelRegistry.withDefaults(), node);
  }

  @AfterAll
  void stop() {
    kit.shutdownTestKit();
  }

  @Test
  void thirtyTwoCallersOneFetch() throws Exception {
    CompletableFuture<dev.corral.core.upstream.UpstreamResponse> gate = new CompletableFuture<>();
    upstream.script = r -> gate;
    ArtifactKey key = ArtifactKey.of("r", "http://127.0.0.1:1/a");
    List<CompletionStage<Waiters.Answer>> answers = new ArrayList<>();
    for (int i = 0; i < 32; i++) {
      answers.add(waiters.await(key, waiters.cancels().reserve()));
    }
    // let every Join reach the entity before the fetch completes
    kit.createTestProbe().awaitAssert(Duration.ofSeconds(5), () -> { assertEquals(1, upstream.total()); return null; });
    gate.complete(ScriptedUpstream.ok(org.apache.pekko.util.ByteString.fromString("hello")));
    int miss = 0;
    for (var a : answers) {
      var ans = (Waiters.Answered) a.toCompletableFuture().get(10, TimeUnit.SECONDS);
      var body = (FetchEntity.Body) ans.reply();
      assertEquals("hello", body.bytes().utf8String());
      if (body.via() == FetchEntity.Via.MISS) miss++;
    }
    assertEquals(1, miss);
    assertEquals(1, upstream.total());
  }
}
