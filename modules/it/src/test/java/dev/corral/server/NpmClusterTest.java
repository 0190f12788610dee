package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * npm tarballs across two nodes (SEMANTICS K1, F1, B1; issue 13 item 1): a node holding the
 * packument and a node holding none make the same key for a tarball, so the upstream sees one
 * request for it; the digest that verifies it is learned by the fetch, wherever it runs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NpmClusterTest {
  private final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  private FakeUpstream upstream;
  private TestCluster cluster;
  private HttpClient client;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    upstream = FakeUpstream.routed(paths);
    String hocon = "corral.repos.npm { type = npm, url = \"" + upstream.url("/registry/") + "\", retries = 0 }\n"
        // Bodies over 64 KiB stream to their waiters while they download (or are copied).
        + "corral.repos.streamed { type = npm, url = \"" + upstream.url("/registry/") + "\", retries = 0,"
        + " inline-limit = 64KiB }\n";
    cluster = TestCluster.start(dir, 2, upstream.url("/"), hocon);
    client = TestNode.client();
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  private void packument(String name, byte[] tarball) throws Exception {
    String json = """
        {"name":"%s","versions":{"1.0.0":{"name":"%s","version":"1.0.0",
         "dist":{"tarball":"%s","integrity":"sha512-%s"}}}}
        """.formatted(name, name, upstream.url("/registry/" + name + "/-/" + name + "-1.0.0.tgz"),
        Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(tarball)));
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    paths.put("/registry/" + name, (exchange, n) -> TestNode.ok(exchange, body));
  }

  @Test
  void oneTarballAskedOnANodeWithItsPackumentAndOneWithoutIsOneUpstreamRequest() throws Exception {
    byte[] tgz = TestNode.bytes(3000, 1);
    packument("shared", tgz);
    CountDownLatch release = new CountDownLatch(1);
    String tarball = "/registry/shared/-/shared-1.0.0.tgz";
    paths.put(tarball, (exchange, n) -> {
      TestNode.await(release);
      TestNode.ok(exchange, tgz);
    });
    CorralServer holding = cluster.node(0);
    CorralServer bare = cluster.node(1);
    // Only node 0 holds the packument (the full variant, as a client asked for it).
    assertEquals(200, TestNode.get(client, holding, "/npm/shared", "Accept", "application/json").statusCode());
    double countedBefore = clientRequestsCounted();
    int registeredBefore0 = holding.cancels().registrations();
    int registeredBefore1 = bare.cancels().registrations();

    CompletableFuture<HttpResponse<byte[]>> a = TestNode.getAsync(client, holding, "/npm/shared/-/shared-1.0.0.tgz");
    CompletableFuture<HttpResponse<byte[]>> b = TestNode.getAsync(client, bare, "/npm/shared/-/shared-1.0.0.tgz");
    TestNode.await("the upstream asked for the tarball", Duration.ofSeconds(20), () -> upstream.requests(tarball) >= 1);
    TestNode.await("a waiter on each node", Duration.ofSeconds(20),
        () -> holding.cancels().registrations() > registeredBefore0 && bare.cancels().registrations() > registeredBefore1);
    release.countDown();

    HttpResponse<byte[]> ra = a.get();
    HttpResponse<byte[]> rb = b.get();
    assertEquals(200, ra.statusCode());
    assertEquals(200, rb.statusCode());
    assertArrayEquals(tgz, ra.body());
    assertArrayEquals(tgz, rb.body());
    assertEquals(1, List.of(xCache(ra), xCache(rb)).stream().filter("MISS"::equals).count(),
        xCache(ra) + " " + xCache(rb));
    assertEquals(1, upstream.requests(tarball), "one upstream request for the tarball, cluster-wide");
    // Issue 13 item 10: the packument the tarball's fetch reads through the cache is not a request.
    assertEquals(countedBefore + 2, clientRequestsCounted(), "one count per client request, cluster-wide");
  }

  /** corral_requests_total for the npm repository, every result, summed over the nodes. */
  private double clientRequestsCounted() {
    double sum = 0;
    for (CorralServer s : cluster.nodes) {
      for (String result : List.of("miss", "coalesced", "hit", "negative", "stale", "revalidated", "peer", "bypass",
          "error", "rejected", "limited")) {
        sum += s.metrics().requests.labelValues("npm", result).get();
      }
    }
    return sum;
  }

  @Test
  void aTarballThatDoesNotMatchItsPackumentIsNeverServedNorCachedWhereverItIsAsked() throws Exception {
    byte[] good = TestNode.bytes(4000, 2);
    byte[] bad = good.clone();
    bad[10] ^= 1;
    packument("tampered", good);
    String tarball = "/registry/tampered/-/tampered-1.0.0.tgz";
    paths.put(tarball, (exchange, n) -> TestNode.ok(exchange, bad));
    CorralServer holding = cluster.node(0);
    CorralServer bare = cluster.node(1);
    assertEquals(200, TestNode.get(client, holding, "/npm/tampered", "Accept", "application/json").statusCode());

    // Asked first where no packument is held, then where one is: a 502 every time, never a copy.
    int asked = 0;
    for (CorralServer s : List.of(bare, holding, bare)) {
      HttpResponse<byte[]> r = TestNode.get(client, s, "/npm/tampered/-/tampered-1.0.0.tgz");
      asked++;
      assertEquals(502, r.statusCode(), "X-Cache " + xCache(r) + ", " + r.body().length + " bytes");
      assertNotEquals("HIT", xCache(r));
      assertEquals(asked, upstream.requests(tarball), "the bad bytes were not cached");
    }
    ArtifactKey key = ArtifactKey.of("npm", upstream.url(tarball));
    for (CorralServer s : cluster.nodes) {
      assertTrue(s.node().store().lookup(key).isEmpty(), "no copy stored");
    }
    assertEquals(List.of(), TestCluster.holders(holding, key));
  }

  @Test
  void aTarballWhosePackumentCannotBeReadIsA502AndNotFetchedUnverified() throws Exception {
    byte[] tgz = TestNode.bytes(2000, 3);
    String tarball = "/registry/flaky/-/flaky-1.0.0.tgz";
    paths.put("/registry/flaky", (exchange, n) -> FakeUpstream.send(exchange, 503, new byte[0]));
    paths.put(tarball, (exchange, n) -> TestNode.ok(exchange, tgz));
    for (CorralServer s : cluster.nodes) {
      HttpResponse<byte[]> r = TestNode.get(client, s, "/npm/flaky/-/flaky-1.0.0.tgz");
      assertEquals(502, r.statusCode(), "X-Cache " + xCache(r) + ", " + r.body().length + " bytes");
    }
    assertEquals(0, upstream.requests(tarball), "no unverified fetch while the packument cannot be read");

    // The packument is back: the next request fetches, verifies and stores the tarball.
    packument("flaky", tgz);
    HttpResponse<byte[]> r = TestNode.get(client, cluster.node(1), "/npm/flaky/-/flaky-1.0.0.tgz");
    assertEquals(200, r.statusCode());
    assertArrayEquals(tgz, r.body());
    assertEquals(1, upstream.requests(tarball));
  }

  @Test
  void aStaleAnswerRelayedFromAnotherNodeSaysItsRevalidationFailed() throws Exception {
    // Issue 13 item 10: a STALE packument answered through the key's entity on another node
    // carries Warning: 111 when the last revalidation failed, as the entity's own node says.
    packument("relayed", TestNode.bytes(1000, 4));
    ArtifactKey key = new ArtifactKey("npm", upstream.url("/registry/relayed"), "application/json", null);
    for (CorralServer s : cluster.nodes) {
      assertEquals(200, TestNode.get(client, s, "/npm/relayed", "Accept", "application/json").statusCode());
    }
    CorralServer host = cluster.entityHost(key.id()).orElseThrow();
    CorralServer other = cluster.others(host).get(0);
    // Both copies an hour old (past metadata-ttl, within max-stale), then the upstream fails.
    long hourAgo = System.currentTimeMillis() - 3_600_000L;
    for (CorralServer s : List.of(host, other)) {
      TestNode.await("a copy on every node", Duration.ofSeconds(20), () -> s.node().store().lookup(key).isPresent());
      var held = s.node().store().lookup(key).orElseThrow();
      s.node().store().touch(key, held.headers(), hourAgo);
    }
    paths.put("/registry/relayed", (exchange, n) -> FakeUpstream.send(exchange, 500, new byte[0]));
    String warning = "111 - \"Revalidation Failed\"";
    // The entity's node: STALE while the revalidation runs, then STALE saying it failed.
    TestNode.await("the entity's node says the revalidation failed", Duration.ofSeconds(20), () -> {
      HttpResponse<byte[]> r = TestNode.get(client, host, "/npm/relayed", "Accept", "application/json");
      return "STALE".equals(xCache(r)) && warning.equals(r.headers().firstValue("Warning").orElse(null));
    });
    HttpResponse<byte[]> relayed = TestNode.get(client, other, "/npm/relayed", "Accept", "application/json");
    assertEquals(200, relayed.statusCode());
    assertEquals("STALE", xCache(relayed));
    assertEquals(warning, relayed.headers().firstValue("Warning").orElse(null));
  }

  @Test
  void aLargeStaleAnswerRelayedToANodeWithoutACopyIsServed() throws Exception {
    // A STALE packument over the cross-node inline limit (half of Artery's 2 MiB large frame) and
    // over its repository's inline limit is copied from the entity's node, streaming, by a node
    // that holds none; the rewritten answer waits for that copy to be stored rather than looking
    // for it in the store at once (a 502 before).
    String padding = "x".repeat(1_500_000);
    String json = """
        {"name":"big","description":"%s","versions":{"1.0.0":{"name":"big","version":"1.0.0",
         "dist":{"tarball":"%s"}}}}
        """.formatted(padding, upstream.url("/registry/big/-/big-1.0.0.tgz"));
    byte[] body = json.getBytes(StandardCharsets.UTF_8);
    paths.put("/registry/big", (exchange, n) -> TestNode.ok(exchange, body));
    ArtifactKey key = new ArtifactKey("streamed", upstream.url("/registry/big"), "application/json", null);
    assertEquals(200, TestNode.get(client, cluster.node(0), "/streamed/big", "Accept", "application/json").statusCode());
    CorralServer host = cluster.entityHost(key.id()).orElseThrow();
    CorralServer other = cluster.others(host).get(0);
    TestNode.await("the entity's node holds a copy", Duration.ofSeconds(20), () -> host.node().store().lookup(key).isPresent());
    other.node().store().remove(key); // only the entity's node holds it now
    var held = host.node().store().lookup(key).orElseThrow();
    host.node().store().touch(key, held.headers(), System.currentTimeMillis() - 3_600_000L);
    paths.put("/registry/big", (exchange, n) -> FakeUpstream.send(exchange, 500, new byte[0]));

    HttpResponse<byte[]> r = TestNode.get(client, other, "/streamed/big", "Accept", "application/json");
    assertEquals(200, r.statusCode(), () -> new String(r.body(), StandardCharsets.UTF_8));
    assertEquals("STALE", xCache(r));
    String served = new String(r.body(), StandardCharsets.UTF_8);
    assertTrue(served.contains(padding), "the whole stale packument");
    assertTrue(served.contains("/streamed/big/-/big-1.0.0.tgz"), "its tarball link rewritten to this node");
  }

  @Test
  void aStalePackumentAskedOnEveryNodeAtOnceIsRevalidatedOnce() throws Exception {
    // F1 for revalidation: stale copies on both nodes, 20 requests on each at once while the one
    // revalidation is held at the upstream: every request is answered (STALE at once) and the
    // upstream sees one revalidation, cluster-wide.
    packument("reval", TestNode.bytes(1000, 5));
    String path = "/registry/reval";
    ArtifactKey key = new ArtifactKey("npm", upstream.url(path), "application/json", null);
    for (CorralServer s : cluster.nodes) {
      assertEquals(200, TestNode.get(client, s, "/npm/reval", "Accept", "application/json").statusCode());
    }
    long hourAgo = System.currentTimeMillis() - 3_600_000L;
    for (CorralServer s : cluster.nodes) {
      TestNode.await("a copy on every node", Duration.ofSeconds(20), () -> s.node().store().lookup(key).isPresent());
      var held = s.node().store().lookup(key).orElseThrow();
      s.node().store().touch(key, held.headers(), hourAgo);
    }
    int before = upstream.requests(path);
    CountDownLatch release = new CountDownLatch(1);
    FakeUpstream.Handler fresh = paths.get(path);
    paths.put(path, (exchange, n) -> {
      TestNode.await(release);
      fresh.handle(exchange, n);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> asked = new java.util.ArrayList<>();
    for (int i = 0; i < 20; i++) {
      for (CorralServer s : cluster.nodes) {
        asked.add(client.sendAsync(TestNode.request(s, "/npm/reval").header("Accept", "application/json").build(),
            HttpResponse.BodyHandlers.ofByteArray()));
      }
    }
    for (CompletableFuture<HttpResponse<byte[]>> f : asked) {
      HttpResponse<byte[]> r = f.get();
      assertEquals(200, r.statusCode());
      assertEquals("STALE", xCache(r), "a copy within max-stale is served while it revalidates");
    }
    TestNode.await("the revalidation reached the upstream", Duration.ofSeconds(20), () -> upstream.requests(path) > before);
    release.countDown();
    CorralServer host = cluster.entityHost(key.id()).orElseThrow();
    TestNode.await("the entity's copy is fresh again", Duration.ofSeconds(20),
        () -> host.node().store().lookup(key).map(a -> a.fetchedAtMillis() > hourAgo).orElse(false));
    for (CorralServer s : cluster.nodes) {
      assertEquals(200, TestNode.get(client, s, "/npm/reval", "Accept", "application/json").statusCode());
    }
    assertEquals(before + 1, upstream.requests(path), "one revalidation for 40 requests over two nodes");
  }
}
