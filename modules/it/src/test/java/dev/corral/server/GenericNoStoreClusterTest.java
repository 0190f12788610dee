package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 16 across three in-JVM nodes: a generic upstream's {@code no-store} body asked on every
 * node at once is answered to every waiter, and no node keeps it: not the entity's node, and no
 * other node as a replica (a small body carried inside the reply) or as a copy (a large one
 * streamed from the entity's node).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GenericNoStoreClusterTest {
  private final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  private FakeUpstream upstream;
  private TestCluster cluster;
  private HttpClient client;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    upstream = FakeUpstream.routed(paths);
    cluster = TestCluster.start(dir, 3, upstream.url("/"), "corral.repos.up { inline-limit = 64KiB, retries = 0 }");
    client = TestNode.client();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  @Test
  void aSmallNoStoreBodyIsOneFetchForEveryNodeAndKeptNowhere() throws Exception {
    askedEverywhereAtOnce("/ns/small.json", TestNode.bytes(8 * 1024, 21));
  }

  @Test
  void aLargeNoStoreBodyStreamsToEveryNodeAndIsKeptNowhere() throws Exception {
    askedEverywhereAtOnce("/ns/large.bin", TestNode.bytes(400 * 1024, 22));
  }

  private void askedEverywhereAtOnce(String path, byte[] body) throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    paths.put(path, (exchange, n) -> {
      if (n == 1) {
        TestNode.await(release);
      }
      exchange.getResponseHeaders().add("Cache-Control", "no-store");
      TestNode.ok(exchange, body);
    });
    int perNode = 3;
    List<CompletableFuture<HttpResponse<byte[]>>> sent = new ArrayList<>();
    for (int i = 0; i < perNode; i++) {
      for (CorralServer s : cluster.nodes) {
        sent.add(TestNode.getAsync(client, s, "/up" + path));
      }
    }
    for (CorralServer s : cluster.nodes) {
      TestNode.await(perNode + " waiters on a node", Duration.ofSeconds(20),
          () -> s.cancels().registrations() >= perNode);
    }
    TestNode.await("the upstream asked", Duration.ofSeconds(20), () -> upstream.requests(path) == 1);
    release.countDown();
    for (CompletableFuture<HttpResponse<byte[]>> f : sent) {
      HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
      assertTrue(List.of("MISS", "COALESCED").contains(xCache(r)), xCache(r));
    }
    // Each node asks once for its waiters (they all registered while the fetch was held), so 9
    // requests are at most 3 fetches; the nodes' asks share one fetch when they reach the key's
    // entity before it ends, which the test cannot observe from outside (on one node:
    // GenericFreshnessHttpTest.concurrentRequestsForOneNoStoreKeyStillCoalesce, exactly one).
    int fetched = upstream.requests(path);
    assertTrue(fetched >= 1 && fetched <= cluster.nodes.size(), "at most one fetch per node: " + fetched);

    ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
    int asked = fetched;
    for (CorralServer s : cluster.nodes) {
      assertTrue(s.node().store().lookup(key).isEmpty(), "no copy on " + s.nodeName());
      HttpResponse<byte[]> later = TestNode.get(client, s, "/up" + path);
      assertEquals("MISS", xCache(later), "a later request on " + s.nodeName() + " is not served from a kept copy");
      assertArrayEquals(body, later.body());
      assertEquals(++asked, upstream.requests(path));
    }
  }
}
