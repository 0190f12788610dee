package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 13 item 2 on 3 real processes and one PostgreSQL: a purge on node 2 removes every node's
 * copy (nodes 1 and 3 stop answering HIT from the old bytes; the next requests fetch once), and a
 * holder that is down during the purge does not serve its old copy after it starts again.
 *
 * <p>The upstream's body for a path changes with each request for it, so old bytes are told
 * from new ones.
 */
@Tag("cross-node")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterPurgeIT {
  private static final String TOKEN = "cluster-purge-it-token";
  private static final int SIZE = 200 * 1024; // above the 64 KiB inline limit: copies stream from the holders

  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private FakeUpstream upstream;
  private CorralCluster cluster;
  private Path temp;

  static byte[] body(String path, int nth) {
    return CrashRestartIT.bytes(path.hashCode() * 31 + nth, SIZE);
  }

  @BeforeAll
  void startCluster() throws Exception {
    temp = Files.createTempDirectory("cluster-purge-it");
    upstream = new FakeUpstream(this::answer);
    Path token = temp.resolve("admin-token");
    Files.writeString(token, TOKEN + "\n");
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(),
        List.of("--admin-token-file", token.toString()), "up=generic:" + upstream.url("/"));
    awaitAllUp();
  }

  private void awaitAllUp() throws Exception {
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(90));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() throws Exception {
    processes.stopAll();
    if (upstream != null) {
      upstream.close();
    }
    if (temp != null) {
      GeneratedBody.deleteTree(temp);
    }
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    FakeUpstream.send(exchange, 200, body(exchange.getRequestURI().getPath(), nth));
  }

  private HttpResponse<byte[]> get(int node, String path) throws Exception {
    return Http.getBytes(cluster.base(node) + "/up" + path);
  }

  private HttpResponse<String> purge(int node, String path) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(URI.create(cluster.base(node) + "/-/cache/up" + path))
        .timeout(Duration.ofSeconds(60)).header("Authorization", "Bearer " + TOKEN).DELETE().build();
    return Http.CLIENT.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  private JsonNode admin(int node, String target) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(URI.create(cluster.base(node) + target))
        .timeout(Duration.ofSeconds(30)).header("Authorization", "Bearer " + TOKEN).GET().build();
    HttpResponse<String> answer = Http.CLIENT.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    assertEquals(200, answer.statusCode(), answer.body());
    return new ObjectMapper().readTree(answer.body());
  }

  private HttpResponse<String> purgePrefix(int node, String prefix) throws Exception {
    HttpRequest r = HttpRequest.newBuilder(URI.create(cluster.base(node) + "/-/admin/cache?repo=up&prefix=" + prefix))
        .timeout(Duration.ofSeconds(60)).header("Authorization", "Bearer " + TOKEN).DELETE().build();
    return Http.CLIENT.send(r, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
  }

  /** Every node holds the path's first body: a second request on each is a HIT. */
  private void heldEverywhere(String path) throws Exception {
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> r = get(i, path);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body(path, 1), r.body());
    }
    for (int i = 0; i < 3; i++) {
      assertEquals("HIT", Http.xCache(get(i, path)), "node-" + (i + 1) + " holds a copy");
    }
    assertEquals(1, upstream.requests(path));
  }

  @Test
  @Order(1)
  void aPurgeOnNodeTwoStopsEveryNodeServingTheOldCopy() throws Exception {
    String path = "/p/everywhere.bin";
    heldEverywhere(path);
    HttpResponse<String> purged = purge(1, path);
    assertEquals(200, purged.statusCode(), purged.body());
    assertTrue(purged.body().contains("\"copies\":3"), purged.body());
    // The first request after the purge finds no copy anywhere. The later ones may be HITs of
    // the new bytes (the node that ran the refetch for another node keeps a copy of it), never
    // of the old ones.
    HttpResponse<byte[]> first = get(0, path);
    assertEquals(200, first.statusCode());
    assertNotEquals("HIT", Http.xCache(first), "node-1 answered from its old copy");
    assertArrayEquals(body(path, 2), first.body(), "node-1 served the old bytes");
    for (int i : new int[] {2, 1}) {
      HttpResponse<byte[]> r = get(i, path);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body(path, 2), r.body(), "node-" + (i + 1) + " served the old bytes");
    }
    assertEquals(2, upstream.requests(path), "fetched again once for the whole cluster");
  }

  @Test
  @Order(2)
  void aHolderDownDuringThePurgeDoesNotServeTheOldCopyAfterItsRestart() throws Exception {
    String path = "/p/missed.bin";
    String underPrefix = "/s/missed-by-prefix.bin";
    heldEverywhere(path);
    heldEverywhere(underPrefix);
    // The admin API on a real process: the listing names the three holders of the key (from its
    // record), the cluster view three Up members, the repositories this one.
    JsonNode listed = admin(0, "/-/admin/keys?repo=up&prefix=/s/");
    assertEquals(1, listed.path("keys").size(), listed.toString());
    assertEquals(3, listed.path("keys").path(0).path("holders").size(), listed.toString());
    JsonNode members = admin(1, "/-/admin/cluster").path("members");
    assertEquals(3, members.size(), members.toString());
    members.forEach(m -> assertEquals("Up", m.path("status").asText(), members.toString()));
    assertEquals("up", admin(2, "/-/admin/repos").path("repos").path(0).path("name").asText());
    cluster.nodes.get(2).terminate();
    cluster.nodes.get(2).awaitExit(Duration.ofSeconds(60));
    cluster.awaitMembersUp(0, 2, Duration.ofSeconds(60));

    HttpResponse<String> purged = purge(1, path);
    assertEquals(200, purged.statusCode(), purged.body());
    assertTrue(purged.body().contains("\"copies\":2"), purged.body());
    assertTrue(purged.body().contains("\"unreachable\":1"), "node-3 is down: " + purged.body());

    // A purge by prefix while node-3 is down: the nodes that answer drop their copies, and the
    // key's tombstone makes node-3 drop its copy when it starts.
    HttpResponse<String> byPrefix = purgePrefix(0, "/s/");
    assertEquals(200, byPrefix.statusCode(), byPrefix.body());
    assertTrue(byPrefix.body().contains("\"keys\":1,\"copies\":2"), byPrefix.body());

    cluster.restart(2, Duration.ofSeconds(90));
    awaitAllUp();
    HttpResponse<byte[]> underPrefixNow = get(2, underPrefix);
    assertEquals(200, underPrefixNow.statusCode());
    assertNotEquals("HIT", Http.xCache(underPrefixNow), "node-3 answered from the copy purged by prefix while it was down");
    assertArrayEquals(body(underPrefix, 2), underPrefixNow.body(), "node-3 served the old bytes");
    HttpResponse<byte[]> r = get(2, path);
    assertEquals(200, r.statusCode());
    assertNotEquals("HIT", Http.xCache(r), "node-3 answered from the copy purged while it was down");
    assertArrayEquals(body(path, 2), r.body(), "node-3 served the old bytes");
    assertEquals(2, upstream.requests(path));
  }
}
