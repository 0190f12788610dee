package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 16: generic repositories honour the upstream's Cache-Control / Expires, with per-path
 * rules, through a whole node over loopback. Ages are on the test's {@link ManualTicker} (the
 * node's clock moves with it), so a copy goes stale exactly when the test says, however slow the
 * machine; what reaches the fake upstream is counted there.
 *
 * <p>Repositories (all at the one fake upstream): {@code gen} (max-stale 0s: a request past the
 * lifetime waits for its revalidation, {@code REVALIDATED}; rules {@code pinned/**} immutable and
 * {@code ruled/**} ttl 10m), {@code swr} (max-stale 1h: stale-while-revalidate, stale-if-error),
 * {@code big} (inline-limit 1KiB: larger bodies stream while they download) and {@code mvn}
 * (maven: another type, unchanged).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GenericFreshnessHttpTest {
  private final ManualTicker ticker = new ManualTicker();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .manualTime(new ManualScheduler(ticker))
      .clock(ticker.clock())
      .config(n -> """
          corral.repos {
            gen {
              type = generic, url = "%1$s", retries = 0, max-stale = 0s
              freshness = [ { path = "pinned/**", immutable = true }, { path = "ruled/**", ttl = 10m } ]
            }
            swr { type = generic, url = "%1$s", retries = 0, max-stale = 1h }
            big { type = generic, url = "%1$s", retries = 0, inline-limit = 1KiB }
            mvn { type = maven, url = "%1$s", retries = 0 }
          }
          """.formatted(n.url("/")));

  /** 304 to a request with the current ETag, else 200 with the body; both with {@code cacheControl}. */
  private static FakeUpstream.Handler validating(String etag, String body, String cacheControl) {
    return (exchange, n) -> {
      exchange.getResponseHeaders().add("ETag", etag);
      if (cacheControl != null) {
        exchange.getResponseHeaders().add("Cache-Control", cacheControl);
      }
      if (etag.equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) {
        FakeUpstream.send(exchange, 304, new byte[0]);
        return;
      }
      exchange.getResponseHeaders().add("Content-Type", "text/plain");
      FakeUpstream.send(exchange, 200, body.getBytes(StandardCharsets.UTF_8));
    };
  }

  private static void sendWith(HttpExchange exchange, String cacheControl, byte[] body) throws IOException {
    exchange.getResponseHeaders().add("Cache-Control", cacheControl);
    exchange.getResponseHeaders().add("Content-Type", "application/octet-stream");
    FakeUpstream.send(exchange, 200, body);
  }

  private HttpResponse<byte[]> get(String target) {
    return node.get(target);
  }

  private static String text(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  private boolean stored(String repo, String upstreamPath) {
    return node.server().node().store().lookup(ArtifactKey.of(repo, node.upstream().url(upstreamPath))).isPresent();
  }

  private List<Path> temporaryFiles() throws IOException {
    Path tmp = node.dir().resolve("node/data/store/tmp");
    if (!Files.isDirectory(tmp)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(tmp)) {
      return files.toList();
    }
  }

  // ---- the upstream's headers

  @Test
  void maxAgeIsAHitWithinItsAgeThenOneConditionalRequestRevalidatesIt() {
    node.paths.put("/maxage/a", validating("\"a1\"", "body a", "max-age=60"));
    assertEquals("MISS", xCache(get("/gen/maxage/a")));

    ticker.advance(Duration.ofSeconds(59));
    HttpResponse<byte[]> fresh = get("/gen/maxage/a");
    assertEquals("HIT", xCache(fresh));
    assertEquals("body a", text(fresh));
    assertEquals(1, node.upstream().requests("/maxage/a"));

    ticker.advance(Duration.ofSeconds(2));
    HttpResponse<byte[]> revalidated = get("/gen/maxage/a");
    assertEquals("REVALIDATED", xCache(revalidated));
    assertEquals("body a", text(revalidated), "the 304 keeps the stored body");
    assertEquals(2, node.upstream().requests("/maxage/a"));
    assertEquals("\"a1\"", node.upstream().seen.stream().filter(s -> s.path().equals("/maxage/a"))
        .toList().get(1).header("If-None-Match"));

    // Fresh again for the whole max-age after the 304.
    ticker.advance(Duration.ofSeconds(59));
    assertEquals("HIT", xCache(get("/gen/maxage/a")));
    assertEquals(2, node.upstream().requests("/maxage/a"));
  }

  @Test
  void expiresMinusDateIsTheLifetime() {
    node.paths.put("/expires/a", (exchange, n) -> {
      Instant now = Instant.now();
      exchange.getResponseHeaders().add("Date", DateTimeFormatter.RFC_1123_DATE_TIME.format(now.atZone(ZoneOffset.UTC)));
      exchange.getResponseHeaders().add("Expires",
          DateTimeFormatter.RFC_1123_DATE_TIME.format(now.plusSeconds(120).atZone(ZoneOffset.UTC)));
      FakeUpstream.send(exchange, 200, "expiring".getBytes(StandardCharsets.UTF_8));
    });
    assertEquals("MISS", xCache(get("/gen/expires/a")));
    ticker.advance(Duration.ofSeconds(100));
    assertEquals("HIT", xCache(get("/gen/expires/a")));
    assertEquals(1, node.upstream().requests("/expires/a"));
    ticker.advance(Duration.ofSeconds(30));
    assertEquals("MISS", xCache(get("/gen/expires/a")), "past Expires (no validator: a plain 200) is fetched again");
    assertEquals(2, node.upstream().requests("/expires/a"));
  }

  @Test
  void anUpstreamThatSendsNoFreshnessHeadersStaysImmutableAsBefore() {
    node.paths.put("/plain/a.tar.gz", validating("\"p1\"", "plain", null));
    assertEquals("MISS", xCache(get("/gen/plain/a.tar.gz")));
    ticker.advance(Duration.ofDays(30));
    assertEquals("HIT", xCache(get("/gen/plain/a.tar.gz")));
    assertEquals(1, node.upstream().requests("/plain/a.tar.gz"));
  }

  @Test
  void noCacheIsStoredButRevalidatedOnEveryRequestNeverServedStale() {
    node.paths.put("/nocache/a", validating("\"n1\"", "no-cache body", "no-cache"));
    assertEquals("MISS", xCache(get("/swr/nocache/a")));
    assertTrue(stored("swr", "/nocache/a"));
    // max-stale is 1h in swr, yet no STALE answer: the request waits for its 304.
    HttpResponse<byte[]> again = get("/swr/nocache/a");
    assertEquals("REVALIDATED", xCache(again));
    assertEquals("no-cache body", text(again));
    assertEquals(2, node.upstream().requests("/nocache/a"));
  }

  @Test
  void mustRevalidateIsNeverServedStaleWhenTheUpstreamFails() {
    for (String path : List.of("/mr/must", "/mr/may")) {
      String cacheControl = path.endsWith("must") ? "max-age=60, must-revalidate" : "max-age=60";
      node.paths.put(path, (exchange, n) -> {
        if (n == 1) {
          exchange.getResponseHeaders().add("ETag", "\"m1\"");
          sendWith(exchange, cacheControl, "last good".getBytes(StandardCharsets.UTF_8));
        } else {
          FakeUpstream.send(exchange, 500, "down".getBytes(StandardCharsets.UTF_8));
        }
      });
      assertEquals("MISS", xCache(get("/swr" + path)));
    }
    ticker.advance(Duration.ofSeconds(61));

    HttpResponse<byte[]> must = get("/swr/mr/must");
    assertEquals(502, must.statusCode(), "must-revalidate: the upstream's error, not the stale copy");
    assertNull(xCache(must));
    assertEquals(2, node.upstream().requests("/mr/must"));

    // The same copy without must-revalidate is served stale (the control: the setup can serve stale).
    HttpResponse<byte[]> may = get("/swr/mr/may");
    assertEquals("STALE", xCache(may));
    assertEquals("last good", text(may));
  }

  // ---- the repository's rules

  @Test
  void ruleImmutableNeverRevalidatesWhateverTheUpstreamSays() {
    node.paths.put("/pinned/p.deb", validating("\"i1\"", "pinned", "max-age=0, must-revalidate"));
    assertEquals("MISS", xCache(get("/gen/pinned/p.deb")));
    ticker.advance(Duration.ofDays(1));
    assertEquals("HIT", xCache(get("/gen/pinned/p.deb")));
    assertEquals(1, node.upstream().requests("/pinned/p.deb"));
  }

  @Test
  void ruleTtlOverridesTheUpstreamLongerAndShorter() {
    node.paths.put("/ruled/long", validating("\"r1\"", "ruled long", "max-age=31536000"));
    node.paths.put("/ruled/short", validating("\"r2\"", "ruled short", "max-age=0"));
    assertEquals("MISS", xCache(get("/gen/ruled/long")));
    assertEquals("MISS", xCache(get("/gen/ruled/short")));

    ticker.advance(Duration.ofMinutes(9));
    assertEquals("HIT", xCache(get("/gen/ruled/short")), "fresh for the rule's 10m though the upstream said 0");
    assertEquals(1, node.upstream().requests("/ruled/short"));

    ticker.advance(Duration.ofMinutes(2));
    HttpResponse<byte[]> revalidated = get("/gen/ruled/long");
    assertEquals("REVALIDATED", xCache(revalidated), "stale after the rule's 10m though the upstream said a year");
    assertEquals("ruled long", text(revalidated));
    assertEquals(2, node.upstream().requests("/ruled/long"));
  }

  // ---- no-store and private

  @Test
  void noStoreAndPrivateAreFetchedEveryTimeAndNeverStored() throws IOException {
    List<Path> before = temporaryFiles();
    for (String cacheControl : List.of("no-store", "private, max-age=600")) {
      String path = "/ns/" + cacheControl.substring(0, 2);
      node.paths.put(path, (exchange, n) -> sendWith(exchange, cacheControl, ("answer " + n).getBytes()));
      HttpResponse<byte[]> first = get("/gen" + path);
      assertEquals(200, first.statusCode());
      assertEquals("MISS", xCache(first));
      assertEquals("answer 1", text(first));
      HttpResponse<byte[]> second = get("/gen" + path);
      assertEquals("MISS", xCache(second), cacheControl + ": a later request is not a hit");
      assertEquals("answer 2", text(second));
      assertEquals(2, node.upstream().requests(path), cacheControl);
      assertTrue(!stored("gen", path), cacheControl + ": nothing in the store");
      assertEquals(cacheControl, second.headers().firstValue("Cache-Control").orElse(null));
      assertTrue(second.headers().firstValue("X-Corral-Not-Stored").isEmpty(), "the internal mark is not replayed");
    }
    assertNoNewTemporaryFile(before);
  }

  @Test
  void concurrentRequestsForOneNoStoreKeyStillCoalesce() throws Exception {
    List<Path> before = temporaryFiles();
    concurrentNoStore("/gen", "/nsc/small", "small no-store".getBytes(StandardCharsets.UTF_8));
    assertNoNewTemporaryFile(before);
  }

  /**
   * A small no-store body's temporary file is deleted before its waiters are answered (a large
   * one's stays for a grace period, so the files of {@link #aLargeNoStoreBodyStreamsToEveryWaiter}
   * may still be there).
   */
  private void assertNoNewTemporaryFile(List<Path> before) throws IOException {
    List<Path> now = new ArrayList<>(temporaryFiles());
    now.removeAll(before);
    assertEquals(List.of(), now, "no temporary file left behind");
  }

  /** A body over the inline limit streams to every waiter while it downloads, and is not stored. */
  @Test
  void aLargeNoStoreBodyStreamsToEveryWaiter() throws Exception {
    concurrentNoStore("/big", "/nsc/large", TestNode.bytes(300 * 1024, 16));
  }

  private void concurrentNoStore(String repo, String path, byte[] body) throws Exception {
    int clients = 4;
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put(path, (exchange, n) -> {
      if (n == 1) {
        arrived.countDown();
        TestNode.await(release);
      }
      sendWith(exchange, "no-store", body);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> futures = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      futures.add(node.getAsync(repo + path));
    }
    TestNode.await(arrived);
    TestNode.await(clients + " waiters registered", Duration.ofSeconds(20),
        () -> node.server().cancels().registrations() >= clients);
    release.countDown();
    int miss = 0;
    int coalesced = 0;
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
      switch (xCache(r)) {
        case "MISS" -> miss++;
        case "COALESCED" -> coalesced++;
        default -> throw new AssertionError("unexpected X-Cache " + xCache(r));
      }
    }
    assertEquals(1, node.upstream().requests(path), "the joined waiters shared one upstream request");
    assertEquals(1, miss);
    assertEquals(clients - 1, coalesced);
    assertTrue(!stored(repo.substring(1), path), "nothing in the store");

    HttpResponse<byte[]> later = get(repo + path);
    assertEquals("MISS", xCache(later), "a request after the fetch fetches again");
    assertArrayEquals(body, later.body());
    assertEquals(2, node.upstream().requests(path));
  }

  // ---- other types know their own mutability

  @Test
  void anotherTypeIgnoresTheUpstreamsFreshnessHeaders() {
    String jar = "/org/example/lib/1.0/lib-1.0.jar";
    node.paths.put(jar, (exchange, n) -> sendWith(exchange, "no-store, max-age=0", "jar bytes".getBytes()));
    assertEquals("MISS", xCache(get("/mvn" + jar)));
    assertTrue(stored("mvn", jar), "a maven jar is stored whatever the upstream says");
    ticker.advance(Duration.ofDays(1));
    assertEquals("HIT", xCache(get("/mvn" + jar)));
    assertEquals(1, node.upstream().requests(jar));
  }
}
