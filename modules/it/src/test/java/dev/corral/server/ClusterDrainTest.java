package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.InputStream;
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
import org.apache.pekko.cluster.sharding.typed.ClusterShardingSettings;
import org.apache.pekko.cluster.sharding.typed.HashCodeMessageExtractor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SEMANTICS L4 in a cluster (issue 13 item 12): a draining node keeps serving the fetches it runs
 * to waiters on other nodes (its peer endpoint stays up until its shards are handed off), and
 * starts no new fetch for them: such a Join is told to ask again, and is answered by the key's
 * next entity on a node that stays.
 */
class ClusterDrainTest {
  private final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  private final CountDownLatch release = new CountDownLatch(1);
  private FakeUpstream upstream;
  private TestCluster cluster;
  private HttpClient client;

  @BeforeEach
  void start(@TempDir Path dir) throws Exception {
    upstream = FakeUpstream.routed(paths);
    // The drain lasts as long as the held fetch: far below this timeout.
    cluster = TestCluster.start(dir, 3, upstream.url("/"), "", "--drain-timeout", "30s");
    client = TestNode.client();
  }

  @AfterEach
  void stop() {
    release.countDown();
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  private ArtifactKey key(String path) {
    return ArtifactKey.of("up", upstream.url(path));
  }

  @Test
  void aStoppingNodeLetsACopyAnotherNodeIsReadingFinishBeforeItClosesItsPeerPort() throws Exception {
    // 48 MiB: more than loopback's socket buffers hold, so the copy is still being sent when the
    // node stops (with fan-out any node may be sending copies, not only a draining entity's node).
    byte[] big = TestNode.bytes(48 * 1024 * 1024, 23);
    paths.put("/drain/big.bin", (exchange, n) -> TestNode.ok(exchange, big));
    CorralServer holder = cluster.nodes.get(0);
    HttpResponse<byte[]> first = TestNode.get(client, holder, "/up/drain/big.bin");
    assertEquals(200, first.statusCode());
    String sha = Sha256.hex(big);
    TestNode.await("the holder's blob", Duration.ofSeconds(30), () -> holder.node().store().blobSize(sha).isPresent());

    RawHttp copy = RawHttp.send(holder.peerAddress(), "GET", "/-/peer/blobs/" + sha);
    InputStream in = copy.input();
    String head = RawHttp.readHead(in);
    assertTrue(head.startsWith("HTTP/1.1 200"), head);
    byte[] start = in.readNBytes(1024 * 1024);
    CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
      try {
        cluster.stop(holder);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    // Not read meanwhile: the copy is stalled until the stop waits for it (or, without that wait,
    // has closed the peer port and cut it).
    TestNode.await("the stop waiting for the copy, or over", Duration.ofSeconds(60),
        () -> holder.waitedForPeerUploads() || stopped.isDone());
    byte[] rest = in.readAllBytes();
    copy.close();
    assertEquals(big.length, start.length + rest.length, "the whole copy, not cut by the stop");
    byte[] whole = java.util.Arrays.copyOf(start, big.length);
    System.arraycopy(rest, 0, whole, start.length, rest.length);
    assertArrayEquals(big, whole);
    stopped.get(60, TimeUnit.SECONDS);
  }

  @Test
  void aDrainingNodeFinishesItsFetchForEveryNodeAndStartsNoNewOne() throws Exception {
    // 4 MiB: over the inline limit of a reply between nodes, so the other nodes' waiters read
    // the bytes from the draining node's peer endpoint.
    byte[] held = TestNode.bytes(4 * 1024 * 1024, 21);
    paths.put("/drain/held.bin", (exchange, n) -> {
      TestNode.await(release);
      TestNode.ok(exchange, held);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> heldRequests = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      for (CorralServer s : cluster.nodes) {
        heldRequests.add(TestNode.getAsync(client, s, "/up/drain/held.bin"));
      }
    }
    TestNode.await("the held fetch", Duration.ofSeconds(20), () -> upstream.requests("/drain/held.bin") == 1);
    ArtifactKey heldKey = key("/drain/held.bin");
    CorralServer draining = cluster.entityHost(heldKey.id()).orElseThrow();
    List<CorralServer> staying = cluster.others(draining);
    for (CorralServer s : cluster.nodes) {
      TestNode.await("every request waiting", Duration.ofSeconds(20), () -> s.cancels().registrations() == 10);
    }

    // A key not asked yet whose entity will start in the same shard, on the draining node.
    var shards = new HashCodeMessageExtractor<Object>(
        ClusterShardingSettings.create(draining.system()).numberOfShards());
    String newPath = null;
    for (int i = 0; newPath == null && i < 100_000; i++) {
      String p = "/drain/new-" + i + ".bin";
      if (shards.shardId(key(p).id()).equals(shards.shardId(heldKey.id()))) {
        newPath = p;
      }
    }
    byte[] fresh = TestNode.bytes(1000, 22);
    paths.put(newPath, (exchange, n) -> TestNode.ok(exchange, fresh));

    CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
      try {
        cluster.stop(draining);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    TestNode.await("the node draining", Duration.ofSeconds(20), () -> draining.node().draining());

    List<CompletableFuture<HttpResponse<byte[]>>> newRequests = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      for (CorralServer s : staying) {
        newRequests.add(TestNode.getAsync(client, s, "/up" + newPath));
      }
    }
    String path = newPath;
    TestNode.await("both staying nodes refused, or a fetch started", Duration.ofSeconds(20),
        () -> upstream.requests(path) > 0 || staying.stream().allMatch(
            s -> s.metrics().fallthrough.labelValues("up", "entity-stopped").get() > 0));
    assertEquals(0, upstream.requests(path), "the draining node started a fetch for another node's waiter");

    release.countDown();
    for (int i = 0; i < heldRequests.size(); i++) {
      HttpResponse<byte[]> r = heldRequests.get(i).get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(held, r.body());
      assertTrue(List.of("MISS", "COALESCED").contains(xCache(r)), "answered by the one fetch: " + xCache(r));
    }
    for (var f : newRequests) {
      HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(fresh, r.body());
    }
    stopped.get(60, TimeUnit.SECONDS);
    assertEquals(1, upstream.requests("/drain/held.bin"), "the waiters on the other nodes were answered by the one fetch");
    assertEquals(1, upstream.requests(path), "fetched once, by the key's entity on a node that stays");
    assertNotEquals(draining, cluster.entityHost(key(path).id()).orElseThrow());
  }
}
