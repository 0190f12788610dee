package dev.corral.server;

import static dev.corral.testkit.TestNode.await;
import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The HTTP surface of a node, over real loopback HTTP: request validation (400 before any
 * upstream contact), methods, HEAD, conditional and range requests, replayed headers, the query
 * as part of a generic key, health, metrics and purge.
 *
 * <p>Repositories: {@code up} (defaults) and {@code small} (inline limit 1 KiB, so its 4 KiB
 * bodies take the large, streamed-from-store path), {@code tight} (waiter budget 300 ms of the
 * node's manual time: it runs out only when the test advances the node's ticker).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HttpSurfaceTest {
  private static final String TOKEN = "s3cret-admin-token";
  private static final String LAST_MODIFIED = "Tue, 01 Dec 2026 10:00:00 GMT";

  /** Any path not set up by a test answers 200 with 4 KiB derived from the path. */
  private static final Duration TIGHT_BUDGET = Duration.ofMillis(300);
  /** The node's intervals and waiter timers: no budget runs out unless a test moves this. */
  private final ManualScheduler timers = new ManualScheduler(new ManualTicker());

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .manualTime(timers)
      .otherwise((exchange, n) -> ok(exchange, bodyOf(exchange.getRequestURI().getPath()),
          etagOf(exchange.getRequestURI().getPath())))
      .config(n -> """
          corral.repos {
            small { type = generic, url = "%s", inline-limit = 1KiB }
            tight { type = generic, url = "%s", waiter-budget = %s }
          }
          """.formatted(n.url("/"), n.url("/"), TIGHT_BUDGET.toMillis() + "ms"))
      .args(n -> {
        Path token = n.dir().resolve("admin-token");
        Files.writeString(token, TOKEN + "\n");
        return new String[] {"--admin-token-file", token.toString()};
      });

  static byte[] bodyOf(String path) {
    return TestNode.bytes(4096, path.hashCode());
  }

  static String etagOf(String path) {
    return "\"e" + Integer.toHexString(path.hashCode()) + "\"";
  }

  private static void ok(HttpExchange exchange, byte[] body, String etag) throws IOException {
    exchange.getResponseHeaders().add("Content-Type", "application/x-test");
    exchange.getResponseHeaders().add("ETag", etag);
    exchange.getResponseHeaders().add("Last-Modified", LAST_MODIFIED);
    FakeUpstream.send(exchange, 200, body);
  }

  private HttpResponse<byte[]> get(String target, String... headers) {
    return node.get(target, headers);
  }

  private HttpResponse<byte[]> send(HttpRequest.Builder request) throws Exception {
    return node.client().send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  // ---- request validation ---------------------------------------------------------------------

  @Test
  void badRequestTargetsAre400WithAOneLineReasonAndNeverReachTheUpstream() throws Exception {
    List<String> targets = List.of(
        "/up/../etc/passwd", "/up/a/../../b", "/up/./a", "/up/a/.",
        "/up/%2e%2e/a", "/up/%2E%2E/a", "/up/.%2e/a", "/up/%2e/a",
        "/up/a%2fb", "/up/a%2F..%2Fb", "/up/%2f",
        "/up/a%00b", "/up/a%5cb", "/up/a%5C..%5Cb",
        "/up/" + "a".repeat(5000),
        "/up//a", "/up/a//b");
    int before = node.upstream().requests();
    double rejectedBefore = node.server().metrics().requests.labelValues("", "rejected").get();
    for (String target : targets) {
      RawHttp.Response r = RawHttp.exchange(node.server().address(), "GET", target);
      String shown = target.length() > 60 ? target.substring(0, 60) + "..." : target;
      assertEquals(400, r.status(), shown + " -> " + r.text());
      assertNull(r.header("X-Cache"), shown);
      String reason = r.text();
      assertTrue(reason.endsWith("\n") && reason.indexOf('\n') == reason.length() - 1 && reason.length() > 1,
          shown + ": one-line reason, got '" + reason + "'");
    }
    assertEquals(before, node.upstream().requests(), "no bad request reached the upstream");
    assertEquals(rejectedBefore + targets.size(),
        node.server().metrics().requests.labelValues("", "rejected").get(), "each counted as rejected");
  }

  @Test
  void unknownRepositoryIs404WithAReason() throws Exception {
    RawHttp.Response r = RawHttp.exchange(node.server().address(), "GET", "/nope/a.bin");
    assertEquals(404, r.status());
    assertEquals("unknown repository: nope\n", r.text());
    assertNull(r.header("X-Cache"));
  }

  @Test
  void onlyGetAndHeadAreServed() throws Exception {
    int before = node.upstream().requests();
    HttpResponse<byte[]> r = send(TestNode.request(node.server(), "/up/post/a").POST(HttpRequest.BodyPublishers.ofString("x")));
    assertEquals(405, r.statusCode());
    assertEquals("GET, HEAD", r.headers().firstValue("Allow").orElse(null));
    HttpResponse<byte[]> put = send(TestNode.request(node.server(), "/up/post/a").PUT(HttpRequest.BodyPublishers.ofString("x")));
    assertEquals(405, put.statusCode());
    assertEquals(before, node.upstream().requests());
  }

  // ---- HEAD, conditional, range ---------------------------------------------------------------

  @Test
  void headOfACachedArtifactHasItsLengthAndNoBody() throws Exception {
    byte[] body = bodyOf("/head/a");
    assertEquals("MISS", xCache(get("/up/head/a")));
    for (String repo : List.of("up", "small")) {
      if (repo.equals("small")) {
        assertEquals("MISS", xCache(get("/small/head/a")));
      }
      try (RawHttp http = RawHttp.send(node.server().address(), "HEAD", "/" + repo + "/head/a")) {
        RawHttp.Response r = http.read();
        assertEquals(200, r.status());
        assertEquals("HIT", r.header("X-Cache"));
        assertEquals(String.valueOf(body.length), r.header("Content-Length"), repo);
        assertEquals(-1, http.input().read(), repo + ": HEAD has no body");
      }
    }
    assertEquals(2, node.upstream().requests("/head/a"));
  }

  @Test
  void headOnAMissFetchesOnce() throws Exception {
    byte[] body = bodyOf("/head/miss");
    try (RawHttp http = RawHttp.send(node.server().address(), "HEAD", "/up/head/miss")) {
      RawHttp.Response r = http.read();
      assertEquals(200, r.status());
      assertEquals("MISS", r.header("X-Cache"));
      assertEquals(String.valueOf(body.length), r.header("Content-Length"));
      assertEquals(-1, http.input().read(), "HEAD has no body");
    }
    HttpResponse<byte[]> r = get("/up/head/miss");
    assertEquals("HIT", xCache(r));
    assertArrayEquals(body, r.body());
    assertEquals(1, node.upstream().requests("/head/miss"));
  }

  @Test
  void conditionalRequestsWithTheUpstreamsValidatorsAre304() throws Exception {
    for (String repo : List.of("up", "small")) {
      String target = "/" + repo + "/cond/a";
      String etag = etagOf("/cond/a");
      assertEquals(200, get(target).statusCode());
      HttpResponse<byte[]> byTag = get(target, "If-None-Match", etag);
      assertEquals(304, byTag.statusCode(), repo);
      assertEquals(0, byTag.body().length);
      assertEquals(etag, byTag.headers().firstValue("ETag").orElse(null));
      HttpResponse<byte[]> byDate = get(target, "If-Modified-Since", LAST_MODIFIED);
      assertEquals(304, byDate.statusCode(), repo);
      HttpResponse<byte[]> otherTag = get(target, "If-None-Match", "\"other\"");
      assertEquals(200, otherTag.statusCode(), repo);
      assertArrayEquals(bodyOf("/cond/a"), otherTag.body());
    }
    assertEquals(2, node.upstream().requests("/cond/a"));
  }

  @Test
  void rangesOfSmallAndLargeStoredBodies() throws Exception {
    byte[] body = bodyOf("/range/a");
    for (String repo : List.of("up", "small")) {
      String target = "/" + repo + "/range/a";
      assertEquals(200, get(target).statusCode());
      HttpResponse<byte[]> r = get(target, "Range", "bytes=10-19");
      assertEquals(206, r.statusCode(), repo);
      assertEquals("bytes 10-19/" + body.length, r.headers().firstValue("Content-Range").orElse(null), repo);
      assertEquals("10", r.headers().firstValue("Content-Length").orElse(null), repo);
      assertArrayEquals(Arrays.copyOfRange(body, 10, 20), r.body(), repo);
      HttpResponse<byte[]> tail = get(target, "Range", "bytes=-5");
      assertEquals(206, tail.statusCode(), repo);
      assertArrayEquals(Arrays.copyOfRange(body, body.length - 5, body.length), tail.body(), repo);
      HttpResponse<byte[]> beyond = get(target, "Range", "bytes=999999999-");
      assertEquals(416, beyond.statusCode(), repo);
      assertEquals("bytes */" + body.length, beyond.headers().firstValue("Content-Range").orElse(null), repo);
    }
  }

  /**
   * A body above the inline limit streams to its waiters from the download; when the download
   * is already over by the time a waiter's stream starts (small bodies finish in microseconds),
   * the waiter must still get the whole body, never an aborted connection.
   */
  @Test
  void aStreamedMissIsCompleteEvenWhenTheDownloadEndedFirst() throws Exception {
    // The race is narrow (about 1 stream in 100 here): many keys, a few clients each.
    int keys = 100;
    int clients = 5;
    ExecutorService readers = Executors.newFixedThreadPool(clients);
    try {
      for (int i = 0; i < keys; i++) {
        String path = "/streamed/" + i;
        List<RawHttp> sent = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
          sent.add(RawHttp.send(node.server().address(), "GET", "/small" + path));
        }
        List<Future<RawHttp.Response>> responses = new ArrayList<>();
        for (RawHttp http : sent) {
          responses.add(readers.submit(http::read));
        }
        for (int c = 0; c < clients; c++) {
          RawHttp.Response r = responses.get(c).get(30, TimeUnit.SECONDS);
          sent.get(c).close();
          assertEquals(200, r.status(), path + " (status 0: aborted before the head)");
          assertTrue(r.complete(), path + ": the connection was aborted after " + r.body().length + " bytes");
          assertArrayEquals(bodyOf(path), r.body(), path);
        }
        assertEquals(1, node.upstream().requests(path));
      }
    } finally {
      readers.shutdownNow();
    }
  }

  // ---- headers and keys -----------------------------------------------------------------------

  @Test
  void missCoalescedAndHitKeepTheUpstreamsHeaders() throws Exception {
    for (String repo : List.of("up", "small")) {
      String path = "/headers/" + repo;
      byte[] body = bodyOf(path);
      CountDownLatch arrived = new CountDownLatch(1);
      CountDownLatch release = new CountDownLatch(1);
      node.paths.put(path, (exchange, n) -> {
        arrived.countDown();
        await(release);
        ok(exchange, body, etagOf(path));
      });
      int base = node.server().cancels().registrations();
      CompletableFuture<HttpResponse<byte[]>> leader = node.getAsync("/" + repo + path);
      await(arrived);
      CompletableFuture<HttpResponse<byte[]>> follower = node.getAsync("/" + repo + path);
      TestNode.await("both wait", Duration.ofSeconds(20), () -> node.server().cancels().registrations() - base == 2);
      release.countDown();
      HttpResponse<byte[]> miss = leader.get(20, TimeUnit.SECONDS);
      HttpResponse<byte[]> coalesced = follower.get(20, TimeUnit.SECONDS);
      assertEquals("MISS", xCache(miss), repo);
      assertEquals("COALESCED", xCache(coalesced), repo);
      HttpResponse<byte[]> hit = get("/" + repo + path);
      assertEquals("HIT", xCache(hit), repo);
      for (HttpResponse<byte[]> r : List.of(miss, coalesced, hit)) {
        String which = repo + " " + xCache(r);
        assertEquals(200, r.statusCode(), which);
        assertArrayEquals(body, r.body(), which);
        assertEquals("application/x-test", r.headers().firstValue("Content-Type").orElse(null), which);
        assertEquals(etagOf(path), r.headers().firstValue("ETag").orElse(null), which);
        assertEquals(LAST_MODIFIED, r.headers().firstValue("Last-Modified").orElse(null), which);
        assertEquals(String.valueOf(body.length), r.headers().firstValue("Content-Length").orElse(null), which);
      }
      assertEquals(1, node.upstream().requests(path));
    }
  }

  @Test
  void theQueryIsPassedOnAndPartOfTheKey() throws Exception {
    assertEquals("MISS", xCache(get("/up/q/a?x=1")));
    assertEquals("MISS", xCache(get("/up/q/a?x=2")));
    assertEquals("HIT", xCache(get("/up/q/a?x=1")));
    assertEquals("MISS", xCache(get("/up/q/a")));
    assertEquals(3, node.upstream().requests("/q/a"));
    assertTrue(node.upstream().targets.containsAll(List.of("/q/a?x=1", "/q/a?x=2", "/q/a")), node.upstream().targets.toString());
  }

  // ---- health, metrics ------------------------------------------------------------------------

  @Test
  void healthEndpoints() throws Exception {
    assertEquals(200, get("/-/health/live").statusCode());
    HttpResponse<byte[]> ready = get("/-/health/ready");
    assertEquals(200, ready.statusCode());
    assertEquals("ready\n", new String(ready.body(), StandardCharsets.UTF_8));
    assertEquals(404, get("/-/nothing").statusCode());
  }

  @Test
  void metricsNameEveryCounterOfTheSemantics() throws Exception {
    // Traffic: a miss, a coalesced waiter, a hit, and a waiter out of budget (a fall-through).
    String path = "/metrics/a";
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put(path, (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, bodyOf(path), etagOf(path));
    });
    int base = node.server().cancels().registrations();
    CompletableFuture<HttpResponse<byte[]>> leader = node.getAsync("/up" + path);
    await(arrived);
    CompletableFuture<HttpResponse<byte[]>> follower = node.getAsync("/up" + path);
    TestNode.await("both wait", Duration.ofSeconds(20), () -> node.server().cancels().registrations() - base == 2);
    String during = new String(get("/-/metrics").body(), StandardCharsets.UTF_8);
    assertTrue(during.contains("corral_inflight_fetches{repo=\"up\"} 1.0"), during);
    release.countDown();
    assertEquals(200, leader.get(20, TimeUnit.SECONDS).statusCode());
    assertEquals(200, follower.get(20, TimeUnit.SECONDS).statusCode());
    assertEquals("HIT", xCache(get("/up" + path)));

    CountDownLatch slow = new CountDownLatch(1);
    CountDownLatch slowArrived = new CountDownLatch(1);
    node.paths.put("/metrics/slow", (exchange, n) -> {
      slowArrived.countDown();
      await(slow);
      ok(exchange, bodyOf("/metrics/slow"), etagOf("/metrics/slow"));
    });
    CompletableFuture<HttpResponse<byte[]>> outOfBudget = node.getAsync("/tight/metrics/slow");
    TestNode.await("the tight waiter's budget running", Duration.ofSeconds(20), () -> timers.pendingWithDelay(TIGHT_BUDGET) >= 1);
    timers.ticker().advance(TIGHT_BUDGET);
    assertEquals(504, outOfBudget.get(20, TimeUnit.SECONDS).statusCode());
    // The fetch goes on past the waiter's budget: let its request reach the upstream before this
    // test ends, so no other test of the class counts it as its own.
    await(slowArrived);
    slow.countDown();

    HttpResponse<byte[]> r = get("/-/metrics");
    assertEquals(200, r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
    String text = new String(r.body(), StandardCharsets.UTF_8);
    for (String sample : List.of(
        "corral_inflight_fetches{repo=\"up\"}",
        "corral_coalesced_total{repo=\"up\"}",
        "corral_fallthrough_total{reason=\"budget\",repo=\"tight\"}",
        "corral_upstream_requests_total{repo=\"up\",status=\"200\"}",
        "corral_requests_total{repo=\"up\",result=\"hit\"}",
        "corral_requests_total{repo=\"up\",result=\"miss\"}",
        "corral_requests_total{repo=\"up\",result=\"coalesced\"}",
        "corral_upstream_fetch_seconds_count{repo=\"up\"}",
        "corral_upstream_fetch_seconds_bucket{")) {
      assertTrue(text.contains(sample), "missing " + sample + " in\n" + text);
    }
  }

  // ---- purge ----------------------------------------------------------------------------------

  private HttpResponse<byte[]> delete(CorralServer node, String target, String authorization) throws Exception {
    HttpRequest.Builder b = TestNode.request(node, target).DELETE();
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return send(b);
  }

  @Test
  void purgeNeedsTheAdminTokenAndMakesTheNextRequestAMiss() throws Exception {
    assertEquals("MISS", xCache(get("/up/purge/a")));
    assertEquals("HIT", xCache(get("/up/purge/a")));
    assertEquals(401, delete(node.server(), "/-/cache/up/purge/a", null).statusCode());
    assertEquals(401, delete(node.server(), "/-/cache/up/purge/a", "Bearer wrong-token").statusCode());
    assertEquals(401, delete(node.server(), "/-/cache/up/purge/a", TOKEN).statusCode(), "not a bearer token");
    assertEquals("HIT", xCache(get("/up/purge/a")), "refused purges purge nothing");
    assertEquals(1, node.upstream().requests("/purge/a"));

    HttpResponse<byte[]> purged = delete(node.server(), "/-/cache/up/purge/a", "Bearer " + TOKEN);
    assertEquals(200, purged.statusCode());
    HttpResponse<byte[]> after = get("/up/purge/a");
    assertEquals("MISS", xCache(after));
    assertArrayEquals(bodyOf("/purge/a"), after.body());
    assertEquals(2, node.upstream().requests("/purge/a"));
    assertEquals("HIT", xCache(get("/up/purge/a")));

    assertEquals(404, delete(node.server(), "/-/cache/up/purge/never-cached", "Bearer " + TOKEN).statusCode());
    assertEquals(404, delete(node.server(), "/-/cache/nope/purge/a", "Bearer " + TOKEN).statusCode());
    assertEquals(400, delete(node.server(), "/-/cache/up/%2e%2e/a", "Bearer " + TOKEN).statusCode());
  }

  @Test
  void purgeIsDisabledWithoutAnAdminToken() throws Exception {
    try (CorralServer plain = TestNode.start(node.dir().resolve("plain"), node.upstream().url("/"), "")) {
      HttpResponse<byte[]> r = delete(plain, "/-/cache/up/purge/b", "Bearer " + TOKEN);
      assertEquals(403, r.statusCode());
      assertFalse(new String(r.body(), StandardCharsets.UTF_8).isBlank());
    }
  }
}
