package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** A node that evicts a key's bytes is dropped from the key's holders (issue 3 item 5). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterEvictionTest {
  private FakeUpstream upstream;
  private TestCluster cluster;
  private final HttpClient client = TestNode.client();

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) ->
        TestNode.ok(exchange, TestNode.bytes(600 * 1024, exchange.getRequestURI().getPath().hashCode())));
    // Each store holds one 600 KiB artifact at a time.
    cluster = TestCluster.start(dir, 2, upstream.url("/"), "", "--max-size", "1MiB");
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  @Test
  void anEvictionRemovesTheNodeFromTheKeysHolders() throws Exception {
    ArtifactKey first = ArtifactKey.of("up", upstream.url("/ev/first.bin"));
    for (CorralServer s : cluster.nodes) {
      assertEquals(200, TestNode.get(client, s, "/up/ev/first.bin").statusCode());
    }
    CorralServer any = cluster.node(0);
    TestNode.await("both nodes hold it", Duration.ofSeconds(20), () -> TestCluster.holders(any, first).size() == 2);
    // Another artifact on node 1 evicts the first from node 1's store (and from node 0's too
    // when the second key's entity runs there and commits it).
    CorralServer evicting = cluster.node(1);
    assertEquals(200, TestNode.get(client, evicting, "/up/ev/second.bin").statusCode());
    // The store evicts when it commits the second, which may follow the body's last byte to the
    // client (a body this large streams to its waiters before the commit).
    TestNode.await("the second artifact evicts the first from node 1", Duration.ofSeconds(20),
        () -> evicting.node().store().lookup(first).isEmpty());
    String evictingUrl = "http://127.0.0.1:" + evicting.peerAddress().getPort();
    TestNode.await("the evicting node dropped from the holders", Duration.ofSeconds(20), () -> {
      List<String> h = TestCluster.holders(any, first);
      int stillHeld = any.node().store().lookup(first).isPresent() ? 1 : 0;
      return !h.contains(evictingUrl) && h.size() == stillHeld;
    });
  }
}
