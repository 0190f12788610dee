package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorNotFound;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A holder that is down when a key is purged does not serve its old copy when it comes back
 * (issue 13 item 2): at start, before its front door binds, it reads the records tagged
 * {@code purged} and drops the copies fetched before their key's purge ({@code MissedPurges}).
 * A copy of another key, never purged, stays.
 */
class MissedPurgesTest {
  private static final String TOKEN = "missed-purge-admin-token";
  private FakeUpstream upstream;
  private TestCluster cluster;
  private final HttpClient client = TestNode.client();

  /** The body changes with each request for a path: an old copy is told from a new one. */
  static byte[] body(String path, int nth) {
    return TestNode.bytes(3000, path.hashCode() * 31L + nth);
  }

  @AfterEach
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void aHolderDownDuringThePurgeDropsItsOldCopyWhenItStarts(@TempDir Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) -> TestNode.ok(exchange, body(exchange.getRequestURI().getPath(), n)));
    Path token = dir.resolve("admin-token");
    Files.writeString(token, TOKEN + "\n");
    cluster = TestCluster.start(dir, 2, upstream.url("/"), "", "--admin-token-file", token.toString());
    String purged = "/m/purged.bin";
    String kept = "/m/kept.bin";
    ArtifactKey key = ArtifactKey.of("up", upstream.url(purged));
    for (CorralServer s : cluster.nodes) {
      assertEquals(200, TestNode.get(client, s, "/up" + purged).statusCode());
    }
    CorralServer first = cluster.node(0);
    TestNode.await("both hold it", Duration.ofSeconds(20), () -> TestCluster.holders(first, key).size() == 2);
    CorralServer down = cluster.node(1);
    assertEquals(200, TestNode.get(client, down, "/up" + kept).statusCode());
    Path downDir = cluster.dirOf(down);
    cluster.stop(down);
    cluster.awaitUp();

    HttpResponse<String> r = client.send(TestNode.request(first, "/-/cache/up" + purged).DELETE()
        .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains("\"copies\":1"), r.body());
    assertTrue(r.body().contains("\"unreachable\":1"), "the holder that is down: " + r.body());

    CorralServer back = cluster.restart(downDir);
    assertFalse(back.node().store().lookup(key).isPresent(), "the copy purged while it was down is gone");
    assertTrue(back.node().store().lookup(ArtifactKey.of("up", upstream.url(kept))).isPresent(),
        "a copy never purged stays");
    cluster.awaitUp();
    HttpResponse<byte[]> again = TestNode.get(client, back, "/up" + purged);
    assertEquals(200, again.statusCode());
    assertArrayEquals(body(purged, 2), again.body(), "the old bytes were served");
    assertEquals(2, upstream.requests(purged));

    // A copy fetched after the purge is not dropped at the next start: only older ones are.
    Path backDir = cluster.dirOf(back);
    TestNode.await("the new copy is stored", Duration.ofSeconds(20), () -> back.node().store().lookup(key).isPresent());
    cluster.stop(back);
    cluster.awaitUp();
    CorralServer again2 = cluster.restart(backDir);
    assertTrue(again2.node().store().lookup(key).isPresent(), "a copy fetched after the purge was dropped");
  }

  /**
   * The check is a changes query, for which pekko-persistence-jdbc starts an actor that would go on
   * reading every new record row every 200 ms (in a cluster: from the shared PostgreSQL, on every
   * node) for as long as the node runs. Once the check is done, no such actor is left.
   */
  @Test
  void noActorGoesOnReadingTheRecordsOnceTheStartHasChecked(@TempDir Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) -> TestNode.ok(exchange, body(exchange.getRequestURI().getPath(), n)));
    try (CorralServer node = TestNode.start(dir, upstream.url("/"), "")) {
      assertEquals(200, TestNode.get(client, node, "/up/m/one.bin").statusCode()); // a record is written
      TestNode.await("the durable state sequence actor stopped", Duration.ofSeconds(20),
          () -> !running(node.system(), "/system/*durable-state-sequence*"));
    }
  }

  private static boolean running(ActorSystem<?> system, String pattern) {
    try {
      system.classicSystem().actorSelection(pattern).resolveOne(Duration.ofSeconds(2)).toCompletableFuture()
          .get(5, TimeUnit.SECONDS);
      return true;
    } catch (ExecutionException e) {
      if (e.getCause() instanceof ActorNotFound) {
        return false;
      }
      throw new AssertionError(e);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
