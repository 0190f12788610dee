package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

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
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Nodes leaving a cluster while others wait on them (issue 3 items 5 and 6, SEMANTICS W4, B2):
 * each test forms its own three-node cluster and stops one node.
 */
class ClusterFailureTest {
  private final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  private final CountDownLatch endOfTest = new CountDownLatch(1);
  private FakeUpstream upstream;
  private TestCluster cluster;
  private HttpClient client;

  @BeforeEach
  void start(@TempDir Path dir) throws Exception {
    upstream = FakeUpstream.routed(paths);
    // A stopped node drains for at most 1 s before it hands its shards off.
    cluster = TestCluster.start(dir, 3, upstream.url("/"), "", "--drain-timeout", "1s");
    client = TestNode.client();
  }

  @AfterEach
  void stop() {
    endOfTest.countDown();
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  private ArtifactKey key(String path) {
    return ArtifactKey.of("up", upstream.url(path));
  }

  @Test
  void waitersOnSurvivingNodesAreAnsweredWhenTheEntitysNodeStopsMidFetch() throws Exception {
    // W4 + W3: the entity's node goes away mid-fetch; the waiters on the other nodes ask again
    // (never the upstream directly), the entity restarts on a survivor, and at most one more
    // upstream request happens.
    byte[] body = TestNode.bytes(100_000, 11);
    paths.put("/gone/a.bin", (exchange, n) -> {
      if (n == 1) {
        endOfTest.await(); // the first fetch never answers
      }
      TestNode.ok(exchange, body);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> sent = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      for (CorralServer s : cluster.nodes) {
        sent.add(TestNode.getAsync(client, s, "/up/gone/a.bin"));
      }
    }
    TestNode.await("the first fetch", Duration.ofSeconds(20), () -> upstream.requests("/gone/a.bin") == 1);
    CorralServer host = cluster.entityHost(key("/gone/a.bin").id()).orElseThrow();
    List<CorralServer> survivors = cluster.others(host);
    survivors.forEach(s -> TestNode.await("waiters", Duration.ofSeconds(20), () -> s.cancels().registrations() == 2));
    List<CompletableFuture<HttpResponse<byte[]>>> onSurvivors = new ArrayList<>();
    for (int i = 0; i < sent.size(); i++) {
      if (cluster.nodes.get(i % 3) != host) {
        onSurvivors.add(sent.get(i));
      }
    }
    cluster.stop(host);
    for (var f : onSurvivors) {
      HttpResponse<byte[]> r = f.get();
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
    }
    assertEquals(2, upstream.requests("/gone/a.bin"), "one more upstream request, not one per waiter");
  }

  @Test
  void aRestartedEntityFindsTheBytesAtAPeerInsteadOfTheUpstream() throws Exception {
    // Issue 3 item 5: the entity moves (its node stopped); the key's record names the nodes that
    // hold the bytes, so the next request anywhere is served from a peer's replica.
    byte[] body = TestNode.bytes(2 * 1024 * 1024, 12);
    paths.put("/moved/a.bin", (exchange, n) -> TestNode.ok(exchange, body));
    ArtifactKey key = key("/moved/a.bin");
    assertEquals(200, TestNode.get(client, cluster.node(0), "/up/moved/a.bin").statusCode());
    CorralServer host = cluster.entityHost(key.id()).orElseThrow();
    CorralServer holder = cluster.others(host).get(0);
    CorralServer third = cluster.others(host).get(1);
    assertArrayEquals(body, TestNode.get(client, holder, "/up/moved/a.bin").body());
    TestNode.await("the replica", Duration.ofSeconds(20), () -> holder.node().store().lookup(key).isPresent());
    // The third node must not hold it already (it did not take part).
    third.node().store().remove(key);
    TestNode.await("both holders recorded", Duration.ofSeconds(20), () -> TestCluster.holders(holder, key).size() == 2);

    cluster.stop(host);
    cluster.awaitUp();
    HttpResponse<byte[]> r = TestNode.get(client, third, "/up/moved/a.bin");
    assertEquals(200, r.statusCode());
    assertEquals("PEER", xCache(r));
    assertArrayEquals(body, r.body());
    assertEquals(1, upstream.requests("/moved/a.bin"), "found through the replica directory");
  }

  @Test
  void aPeerTransferThatBreaksMidBodyAbortsTheClientConnection() throws Exception {
    // B2 across nodes: a copy from another node that breaks is never presented as complete.
    byte[] body = TestNode.bytes(20 * 1024 * 1024, 13);
    paths.put("/broken/a.bin", (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/x-test");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body, 0, body.length / 2);
      exchange.getResponseBody().flush();
      endOfTest.await(); // the rest never comes while the test runs
    });
    Map<CorralServer, CompletableFuture<HttpResponse<byte[]>>> sent = new java.util.HashMap<>();
    for (CorralServer s : cluster.nodes) {
      sent.put(s, TestNode.getAsync(client, s, "/up/broken/a.bin"));
    }
    ArtifactKey key = key("/broken/a.bin");
    TestNode.await("the fetch", Duration.ofSeconds(20), () -> upstream.requests("/broken/a.bin") == 1);
    CorralServer host = cluster.entityHost(key.id()).orElseThrow();
    List<CorralServer> copying = cluster.others(host);
    // Each other node copies from the holder: its copy's writer plus its client's reader.
    copying.forEach(s -> TestNode.await("a copy streaming", Duration.ofSeconds(20),
        () -> s.node().downloads().references() >= 2));
    // The holder goes away mid-body: every copy from it breaks.
    cluster.stop(host);
    for (CorralServer s : copying) {
      assertThrows(ExecutionException.class, () -> sent.get(s).get(),
          "a broken copy must abort the client's connection, never end it as if complete");
    }
    for (CorralServer s : copying) {
      assertFalse(s.node().store().lookup(key).isPresent(), "nothing half-copied is kept");
    }
  }
}
