package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The metrics beyond coalescing (issue 16), scraped from {@code /-/metrics} of one node: the
 * response-time histogram by repository and X-Cache, requests in flight, the store's gauges, the
 * cluster's, and the JVM's own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MetricsHttpTest {
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed();

  private Scrape scrape() {
    HttpResponse<byte[]> r = node.get("/-/metrics");
    assertEquals(200, r.statusCode());
    return Scrape.parse(new String(r.body(), StandardCharsets.UTF_8));
  }

  @Test
  void aMissAndAHitAreTimedUnderTheirRepositoryAndXCache() {
    node.paths.put("/timed/a.bin", (exchange, n) -> TestNode.ok(exchange, TestNode.bytes(2000, 1)));
    Scrape before = scrape();
    assertEquals("MISS", xCache(node.get("/up/timed/a.bin")));
    assertEquals("HIT", xCache(node.get("/up/timed/a.bin")));
    assertEquals("HIT", xCache(node.get("/up/timed/a.bin")));
    Scrape after = scrape();
    String count = "corral_http_response_seconds_count";
    assertEquals(2, after.valueOrZero(count, "repo", "up", "cache", "HIT")
        - before.valueOrZero(count, "repo", "up", "cache", "HIT"), "two hits");
    assertEquals(1, after.valueOrZero(count, "repo", "up", "cache", "MISS")
        - before.valueOrZero(count, "repo", "up", "cache", "MISS"), "one miss");
    // Every bucket bound from half a millisecond to a minute is shown, and the last holds all.
    assertTrue(after.value("corral_http_response_seconds_bucket", "repo", "up", "cache", "HIT", "le", "5.0E-4")
        .isPresent(), "the 0.5 ms bucket");
    assertEquals(after.valueOrZero(count, "repo", "up", "cache", "HIT"),
        after.valueOrZero("corral_http_response_seconds_bucket", "repo", "up", "cache", "HIT", "le", "60.0"));
    // The scrape before this one is timed too, under no repository and no X-Cache.
    assertTrue(after.valueOrZero(count, "repo", "-", "cache", "none") >= 1);
  }

  @Test
  void theStoreGrowsByAMissAndShowsItsFreeDisk() {
    byte[] body = TestNode.bytes(50_000, 2);
    node.paths.put("/store/b.bin", (exchange, n) -> TestNode.ok(exchange, body));
    Scrape before = scrape();
    assertEquals("MISS", xCache(node.get("/up/store/b.bin")));
    Scrape after = scrape();
    assertEquals(body.length, after.valueOrZero("corral_store_bytes") - before.valueOrZero("corral_store_bytes"));
    assertEquals(1, after.valueOrZero("corral_store_entries") - before.valueOrZero("corral_store_entries"));
    assertTrue(after.valueOrZero("corral_store_free_disk_bytes") > 0);
    assertTrue(after.value("corral_store_evictions_total", "reason", "size").isPresent());
    assertTrue(after.value("corral_store_evictions_total", "reason", "damaged").isPresent());
  }

  @Test
  void aRequestWaitingForItsFetchIsInFlight() throws Exception {
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/slow/c.bin", (exchange, n) -> {
      arrived.countDown();
      TestNode.await(release);
      TestNode.ok(exchange, TestNode.bytes(100, 3));
    });
    CompletableFuture<HttpResponse<byte[]>> waiting = node.getAsync("/up/slow/c.bin");
    TestNode.await(arrived);
    // The scrape is a request in flight itself.
    assertEquals(2, scrape().valueOrZero("corral_http_requests_in_flight"), "the waiting request and the scrape");
    release.countDown();
    assertEquals(200, waiting.get(20, TimeUnit.SECONDS).statusCode());
    TestNode.await("the answer sent", Duration.ofSeconds(20),
        () -> scrape().valueOrZero("corral_http_requests_in_flight") == 1);
  }

  @Test
  void theClusterShowsThisNodeUpAndTheEntitiesItRuns() {
    node.paths.put("/cluster/d.bin", (exchange, n) -> TestNode.ok(exchange, TestNode.bytes(100, 4)));
    assertEquals("MISS", xCache(node.get("/up/cluster/d.bin")));
    Scrape s = scrape();
    assertEquals(1, s.valueOrZero("corral_cluster_members", "status", "up"));
    assertEquals(0, s.valueOrZero("corral_cluster_members", "status", "leaving"));
    assertEquals(0, s.valueOrZero("corral_cluster_unreachable_members"));
    assertTrue(s.valueOrZero("corral_cluster_shards") >= 1, "the fetched key's shard");
    assertTrue(s.valueOrZero("corral_cluster_entities") >= 1, "the fetched key's entity");
  }

  @Test
  void theJvmsOwnMetricsAreShown() {
    Scrape s = scrape();
    assertTrue(s.valueOrZero("jvm_memory_used_bytes", "area", "heap") > 0, "heap");
    assertTrue(s.value("jvm_memory_max_bytes", "area", "heap").isPresent(), "heap maximum");
    assertTrue(s.valueOrZero("jvm_threads_current") > 0, "threads");
    assertTrue(s.value("jvm_buffer_pool_used_bytes", "pool", "direct").isPresent(), "direct buffers");
    assertTrue(s.names().contains("jvm_gc_collection_seconds_count"), "GC pauses: " + s.names());
  }
}
