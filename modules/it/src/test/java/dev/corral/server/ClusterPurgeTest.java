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
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Purge is cluster-wide (issue 13 item 2): {@code DELETE /-/cache/...} on one node goes to the
 * key's entity, which tombstones the record and tells every holder to delete its copy; the reply
 * counts the copies that went and says whether a fetch was running.
 *
 * <p>The upstream's body for a path changes with each request for it, so a node that served its
 * old copy after the purge would be seen serving the first body.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterPurgeTest {
  private static final String TOKEN = "purge-admin-token";
  private FakeUpstream upstream;
  private TestCluster cluster;
  private final HttpClient client = TestNode.client();
  /** The upstream holds its answer for /held/ paths until this opens. */
  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch heldAsked = new CountDownLatch(1);

  static byte[] body(String path, int nth) {
    return TestNode.bytes(3000, path.hashCode() * 31L + nth);
  }

  private Path dir;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    this.dir = dir;
    upstream = new FakeUpstream((exchange, n) -> {
      String path = exchange.getRequestURI().getPath();
      if (path.startsWith("/held/")) {
        heldAsked.countDown();
        release.await(30, TimeUnit.SECONDS);
      }
      TestNode.ok(exchange, body(path, n));
    });
    Path token = dir.resolve("admin-token");
    Files.writeString(token, TOKEN + "\n");
    cluster = TestCluster.start(dir, 3, upstream.url("/"), "", "--admin-token-file", token.toString());
  }

  @AfterAll
  void stop() {
    release.countDown();
    if (cluster != null) {
      cluster.close();
    }
    upstream.close();
  }

  private HttpResponse<String> purge(CorralServer s, String target) throws Exception {
    return client.send(TestNode.request(s, "/-/cache" + target).DELETE()
        .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  @Test
  void aPurgeOnOneNodeRemovesEveryHoldersCopyAndTheNextRequestsFetchOnce() throws Exception {
    String path = "/p/every.bin";
    ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
    for (CorralServer s : cluster.nodes) {
      HttpResponse<byte[]> r = TestNode.get(client, s, "/up" + path);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body(path, 1), r.body());
    }
    assertEquals(1, upstream.requests(path));
    CorralServer any = cluster.node(0);
    TestNode.await("all three hold it", Duration.ofSeconds(20), () -> TestCluster.holders(any, key).size() == 3);

    HttpResponse<String> purged = purge(cluster.node(1), "/up" + path);
    assertEquals(200, purged.statusCode(), purged.body());
    assertTrue(purged.body().contains("\"copies\":3"), purged.body());
    assertTrue(purged.body().contains("\"unreachable\":0"), purged.body());
    assertTrue(purged.body().contains("\"fetchRunning\":false"), purged.body());
    for (CorralServer s : cluster.nodes) {
      assertFalse(s.node().store().lookup(key).isPresent(), "a holder still has its copy");
    }
    assertEquals(0, TestCluster.holders(any, key).size(), "the record lists no holder");

    // Every node now serves the body fetched after the purge, fetched once for all of them.
    for (CorralServer s : cluster.nodes) {
      HttpResponse<byte[]> r = TestNode.get(client, s, "/up" + path);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body(path, 2), r.body(), "the old bytes came back");
    }
    assertEquals(2, upstream.requests(path));
    assertEquals(404, purge(cluster.node(2), "/up/p/never-cached.bin").statusCode());
  }

  @Test
  void aPurgeWhileAFetchRunsSaysSoAndTheFetchStillAnswersItsWaiter() throws Exception {
    String path = "/held/running.bin";
    CompletableFuture<HttpResponse<byte[]>> waiting = TestNode.getAsync(client, cluster.node(0), "/up" + path);
    assertTrue(heldAsked.await(20, TimeUnit.SECONDS), "the fetch reached the upstream");
    HttpResponse<String> purged = purge(cluster.node(2), "/up" + path);
    assertEquals(200, purged.statusCode(), purged.body());
    assertTrue(purged.body().contains("\"fetchRunning\":true"), purged.body());
    release.countDown();
    HttpResponse<byte[]> r = waiting.get(30, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertArrayEquals(body(path, 1), r.body());
  }

  @Test
  void aPurgeWhoseRecordCannotBeReadIs503AndStillRemovesThisNodesCopy() throws Exception {
    String path = "/p/no-record.bin";
    ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
    CorralServer s = cluster.node(0);
    assertEquals(200, TestNode.get(client, s, "/up" + path).statusCode());
    // A copy relayed from the key's node is kept here after the answer, on the I/O dispatcher.
    TestNode.await("this node keeps its copy", java.time.Duration.ofSeconds(20),
        () -> s.node().store().lookup(key).isPresent());
    // The records' table goes away for a moment: the entity cannot read who holds the key.
    String url = "jdbc:h2:file:" + dir.resolve("shared-db").resolve("corral")
        + ";DB_CLOSE_ON_EXIT=FALSE;DATABASE_TO_UPPER=false";
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(url, "sa", "");
        java.sql.Statement st = c.createStatement()) {
      st.execute("ALTER TABLE \"durable_state\" RENAME TO \"durable_state_away\"");
      try {
        HttpResponse<String> r = purge(s, "/up" + path);
        assertEquals(503, r.statusCode(), r.body());
        assertTrue(r.body().contains("\"copies\":1"), "this node's copy went: " + r.body());
        assertFalse(s.node().store().lookup(key).isPresent());
      } finally {
        st.execute("ALTER TABLE \"durable_state_away\" RENAME TO \"durable_state\"");
      }
    }
  }

  private HttpResponse<String> purgePrefix(CorralServer s, String query, String token) throws Exception {
    HttpRequest.Builder b = TestNode.request(s, "/-/admin/cache" + query).DELETE();
    if (token != null) {
      b.header("Authorization", "Bearer " + token);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  @Test
  void aPurgeByPrefixOnOneNodeRemovesTheMatchingCopiesOfEveryNodeAndNothingElse() throws Exception {
    java.util.List<String> purged = java.util.List.of("/q/a.bin", "/q/sub/b.bin");
    java.util.List<String> kept = java.util.List.of("/r/c.bin", "/qq.bin");
    CorralServer any = cluster.node(0);
    for (String path : concat(purged, kept)) {
      for (CorralServer s : cluster.nodes) {
        assertEquals(200, TestNode.get(client, s, "/up" + path).statusCode());
      }
      ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
      TestNode.await("all three hold " + path, Duration.ofSeconds(20), () -> TestCluster.holders(any, key).size() == 3);
    }

    // The listing names the holders of each key (from its record).
    HttpResponse<String> listed = client.send(TestNode.request(any, "/-/admin/keys?repo=up&prefix=/r/")
        .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    assertEquals(200, listed.statusCode(), listed.body());
    var listing = new com.fasterxml.jackson.databind.ObjectMapper().readTree(listed.body());
    assertEquals(1, listing.path("keys").size(), listed.body());
    assertEquals(3, listing.path("keys").path(0).path("holders").size(), listed.body());
    assertTrue(listing.path("keys").path(0).path("holders").toString().contains(any.node().peers().self().orElseThrow()),
        listed.body());
    assertFalse(listing.path("keys").path(0).has("id"), listed.body());

    // One more key under the prefix, asked on node-1 only: the purge is taken by a node that does
    // not hold it, so only asking every node finds it.
    String elsewhere = "/q/elsewhere.bin";
    ArtifactKey elsewhereKey = ArtifactKey.of("up", upstream.url(elsewhere));
    assertEquals(200, TestNode.get(client, cluster.node(0), "/up" + elsewhere).statusCode());
    TestNode.await("node-1 holds " + elsewhere, Duration.ofSeconds(20),
        () -> cluster.node(0).node().store().lookup(elsewhereKey).isPresent());
    CorralServer purger = cluster.nodes.stream().filter(s -> s.node().store().lookup(elsewhereKey).isEmpty())
        .findFirst().orElseThrow(() -> new AssertionError("every node holds " + elsewhere));
    long elsewhereCopies = cluster.nodes.stream().filter(s -> s.node().store().lookup(elsewhereKey).isPresent()).count();

    HttpResponse<String> r = purgePrefix(purger, "?repo=up&prefix=/q/", TOKEN);
    assertEquals(200, r.statusCode(), r.body());
    var answer = new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.body());
    assertEquals(3, answer.path("keys").asInt(), r.body());
    assertEquals(6 + elsewhereCopies, answer.path("copies").asInt(), "two keys on three nodes and one elsewhere: " + r.body());
    for (CorralServer s : cluster.nodes) {
      assertFalse(s.node().store().lookup(elsewhereKey).isPresent(), "a holder still has its copy of " + elsewhere);
    }
    assertEquals(0, answer.path("unreachableNodes").size(), r.body());
    assertEquals(upstream.url("/q/"), answer.path("prefix").asText());
    for (String path : purged) {
      ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
      for (CorralServer s : cluster.nodes) {
        assertFalse(s.node().store().lookup(key).isPresent(), "a holder still has its copy of " + path);
      }
      assertEquals(0, TestCluster.holders(any, key).size(), "the record of " + path + " lists no holder");
    }
    for (String path : kept) {
      ArtifactKey key = ArtifactKey.of("up", upstream.url(path));
      for (CorralServer s : cluster.nodes) {
        assertTrue(s.node().store().lookup(key).isPresent(), path + " is not under the prefix");
      }
    }
    // The next requests fetch the purged paths once more, for the whole cluster.
    for (CorralServer s : cluster.nodes) {
      HttpResponse<byte[]> again = TestNode.get(client, s, "/up/q/a.bin");
      assertEquals(200, again.statusCode());
      assertArrayEquals(body("/q/a.bin", 2), again.body(), "the old bytes came back");
    }
    assertEquals(2, upstream.requests("/q/a.bin"));
    assertEquals(1, upstream.requests("/r/c.bin"));
  }

  @Test
  void aPurgeByPrefixNeedsTheAdminTokenARepositoryAndAPrefix() throws Exception {
    CorralServer s = cluster.node(0);
    assertEquals(401, purgePrefix(s, "?repo=up&prefix=/", null).statusCode());
    assertEquals(401, purgePrefix(s, "?repo=up&prefix=/", "wrong").statusCode());
    assertEquals(400, purgePrefix(s, "?repo=up", TOKEN).statusCode());
    assertEquals(400, purgePrefix(s, "?prefix=/", TOKEN).statusCode());
    assertEquals(400, purgePrefix(s, "?repo=up&prefix=", TOKEN).statusCode());
    assertEquals(404, purgePrefix(s, "?repo=nothing&prefix=/", TOKEN).statusCode());
    assertEquals(405, client.send(TestNode.request(s, "/-/admin/cache?repo=up&prefix=/").GET()
        .header("Authorization", "Bearer " + TOKEN).build(), HttpResponse.BodyHandlers.discarding()).statusCode());
    HttpResponse<String> none = purgePrefix(s, "?repo=up&prefix=/nothing-here/", TOKEN);
    assertEquals(200, none.statusCode(), none.body());
    assertTrue(none.body().contains("\"keys\":0"), none.body());
  }

  private static java.util.List<String> concat(java.util.List<String> a, java.util.List<String> b) {
    java.util.List<String> all = new java.util.ArrayList<>(a);
    all.addAll(b);
    return all;
  }
}
