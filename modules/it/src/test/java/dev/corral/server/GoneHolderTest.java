package dev.corral.server;

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
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The record tells the truth about holders (issue 13 item 3): a node that has left the cluster is
 * no longer offered as a holder, so a miss elsewhere goes to the upstream instead of copying from
 * a node that is not there.
 */
class GoneHolderTest {
  private FakeUpstream upstream;
  private TestCluster cluster;
  private com.sun.net.httpserver.HttpServer impostor;
  private final HttpClient client = TestNode.client();

  @AfterEach
  void stop() {
    if (impostor != null) {
      impostor.stop(0);
    }
    if (cluster != null) {
      cluster.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void aHolderThatLeftIsNotOfferedAndTheNextMissFetchesFromTheUpstream(@TempDir Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) ->
        TestNode.ok(exchange, TestNode.bytes(3000, exchange.getRequestURI().getPath().hashCode())));
    cluster = TestCluster.start(dir, 3, upstream.url("/"), "");
    CorralServer leaving = cluster.node(1);
    // A key whose entity runs on the node that will leave: it is then that key's only holder.
    String path = null;
    for (int i = 0; i < 40 && path == null; i++) {
      String p = "/g/k" + i + ".bin";
      assertEquals(200, TestNode.get(client, leaving, "/up" + p).statusCode());
      Optional<CorralServer> host = cluster.entityHost(ArtifactKey.of("up", upstream.url(p)).id());
      if (host.isPresent() && host.get() == leaving) {
        path = p;
      }
    }
    assertTrue(path != null, "no key of the first 40 ran on node 1");
    ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
    String leavingUrl = "http://127.0.0.1:" + leaving.peerAddress().getPort();
    CorralServer asking = cluster.node(0);
    TestNode.await("the record lists node 1 alone", Duration.ofSeconds(20),
        () -> TestCluster.holders(asking, key).equals(List.of(leavingUrl)));
    String neverSeen = "http://127.0.0.1:1";
    assertEquals(List.of(leavingUrl, neverSeen), asking.node().peers().live(List.of(leavingUrl, neverSeen)));

    int leavingPort = leaving.peerAddress().getPort();
    cluster.stop(leaving);
    cluster.awaitUp();
    // Whatever listens at the gone node's address now is not it: a copy asked there is counted.
    List<String> pathsThere = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicInteger askedThere = new java.util.concurrent.atomic.AtomicInteger();
    impostor = com.sun.net.httpserver.HttpServer.create(new java.net.InetSocketAddress("127.0.0.1", leavingPort), 8);
    impostor.createContext("/", exchange -> {
      askedThere.incrementAndGet();
      pathsThere.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
      exchange.sendResponseHeaders(404, -1);
      exchange.close();
    });
    impostor.start();
    TestNode.await("node 1's URL is no longer offered", Duration.ofSeconds(20), () -> cluster.nodes.stream()
        .allMatch(s -> s.node().peers().live(List.of(leavingUrl, neverSeen)).equals(List.of(neverSeen))));
    HttpResponse<byte[]> r = TestNode.get(client, asking, "/up" + path);
    assertEquals(200, r.statusCode());
    assertArrayEquals(TestNode.bytes(3000, path.hashCode()), r.body());
    assertEquals(2, upstream.requests(path), "fetched again from the upstream");
    assertEquals(0, askedThere.get(), "the gone node was still offered as a holder: " + pathsThere);
  }
}
