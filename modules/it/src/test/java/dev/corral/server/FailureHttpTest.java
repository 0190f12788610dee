package dev.corral.server;

import static dev.corral.testkit.TestNode.ok;
import static dev.corral.testkit.TestNode.await;
import static dev.corral.testkit.TestNode.xCache;
import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import dev.corral.testkit.upstream.RawUpstream;
import java.net.http.HttpResponse;
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
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS W2, W3, B2 and the not-found TTL over real HTTP, measured at the upstream: failures
 * are shared by every waiter of the one fetch, retried only inside it, never cached, and a short
 * body is never passed on as a complete 200.
 *
 * <p>The node runs on manual time: its intervals (the not-found TTL) and its waiter timers
 * (budgets, re-asks) pass only when a test advances its {@link ManualTicker}, so no verdict
 * here depends on how fast the machine is.
 *
 * <p>Repositories of the one node: {@code up} (1 retry after 100 ms, not-found remembered for 1 s
 * of the node's time), {@code raw} and {@code rawbig} (a raw-socket upstream that can cut
 * bodies short; {@code rawbig} streams bodies above 64 KiB), {@code slow} (waiter budget 500 ms,
 * answers 504) and {@code bypass} (the same budget, then a direct fetch), {@code pybypass} and
 * {@code pyverify} (PyPI, the same budget, then a direct fetch), {@code m2verify} (Maven, the same).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FailureHttpTest {
  private static final int MIB = 1024 * 1024;
  private static final Duration NEGATIVE_TTL = Duration.ofSeconds(1);
  private static final Duration BUDGET = Duration.ofMillis(500);

  /** The node's source of interval time: the negative TTL and the budgets pass only when a test moves it. */
  private final ManualTicker ticker = new ManualTicker();
  /** The node's waiter timers, in the ticker's time. */
  private final ManualScheduler timers = new ManualScheduler(ticker);
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().withRawUpstream().manualTime(timers).config(n -> """
      corral.repos {
        up { retries = 1, retry-backoff = 100ms, negative-ttl = %s }
        raw { type = generic, url = "%s", retries = 1, retry-backoff = 100ms }
        rawbig { type = generic, url = "%s", retries = 1, retry-backoff = 100ms, inline-limit = 64KiB }
        slow { type = generic, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s }
        bypass { type = generic, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s,
                 on-budget-exhausted = bypass }
        pybypass { type = pypi, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s,
                 on-budget-exhausted = bypass }
        pydirect { type = pypi, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s,
                 on-budget-exhausted = bypass }
        pyverify { type = pypi, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s,
                 on-budget-exhausted = bypass }
        m2verify { type = maven, url = "%s", first-byte-timeout = 10s, retries = 0, waiter-budget = %s,
                 on-budget-exhausted = bypass }
      }
      """.formatted(NEGATIVE_TTL.toMillis() + "ms", n.raw().url("/"), n.raw().url("/"),
          n.url("/"), BUDGET.toMillis() + "ms", n.url("/"), BUDGET.toMillis() + "ms",
          n.url("/pypi/"), BUDGET.toMillis() + "ms", n.url("/pypi/"), BUDGET.toMillis() + "ms",
          n.url("/pypi/"), BUDGET.toMillis() + "ms", n.url("/m2/"), BUDGET.toMillis() + "ms"));

  private void waitersRegistered(int n) {
    TestNode.await(n + " waiters registered", Duration.ofSeconds(20), () -> node.server().cancels().registrations() >= n);
  }

  /** Waits until {@code n} waiters have their budget running on the node's scheduler. */
  private void budgetsRunning(int n) {
    TestNode.await(n + " budgets running", Duration.ofSeconds(20), () -> timers.pendingWithDelay(BUDGET) >= n);
  }

  private void fetchesEnded(String repo) {
    TestNode.await("no fetch in flight for " + repo, Duration.ofSeconds(20),
        () -> node.server().metrics().inflightFetches.labelValues(repo).get() == 0);
  }

  private List<CompletableFuture<HttpResponse<byte[]>>> send(int clients, String target) {
    List<CompletableFuture<HttpResponse<byte[]>>> futures = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      futures.add(node.getAsync(target));
    }
    return futures;
  }

  @Test
  void upstreamErrorIsSharedByEveryWaiterRetriedOnceAndNotCached() throws Exception {
    byte[] body = TestNode.bytes(2048, 11);
    AtomicBoolean recovered = new AtomicBoolean(false);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/e500/a", (exchange, n) -> {
      if (recovered.get()) {
        ok(exchange, body);
        return;
      }
      if (n == 1) {
        arrived.countDown();
        await(release);
      }
      FakeUpstream.send(exchange, 500, "boom".getBytes());
    });

    List<CompletableFuture<HttpResponse<byte[]>>> futures = send(50, "/up/e500/a");
    await(arrived);
    waitersRegistered(50);
    release.countDown();
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      // "Promptly": the node's time stands still in this test, so no budget ran out and no waiter
      // asked again (no polling): each was answered by the one fetch's outcome (its retry included).
      HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
      assertEquals(502, r.statusCode());
      assertNull(xCache(r), "an error Corral makes carries no X-Cache");
    }
    assertEquals(2, node.upstream().requests("/e500/a"), "one fetch plus its one retry");

    recovered.set(true);
    HttpResponse<byte[]> r = node.get("/up/e500/a");
    assertEquals(200, r.statusCode());
    assertEquals("MISS", xCache(r), "the error was not cached");
    assertArrayEquals(body, r.body());
    assertEquals(3, node.upstream().requests("/e500/a"));
  }

  /** Answers 200 with a 1 MiB Content-Length, then closes after 512 KiB (until recovered). */
  private RawUpstream.TargetScript truncating(byte[] body, AtomicBoolean recovered, CountDownLatch arrived,
      CountDownLatch release) {
    return (target, socket, out) -> {
      boolean cut = !recovered.get();
      if (cut) {
        arrived.countDown();
        await(release);
      }
      out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/x-test\r\nContent-Length: " + body.length
          + "\r\nConnection: close\r\n\r\n").getBytes(ISO_8859_1));
      out.write(body, 0, cut ? body.length / 2 : body.length);
      out.flush();
    };
  }

  private List<RawHttp.Response> rawClients(int clients, String target, Runnable whenAllSent) throws Exception {
    List<RawHttp> sent = new ArrayList<>();
    ExecutorService readers = Executors.newFixedThreadPool(clients);
    try {
      for (int i = 0; i < clients; i++) {
        sent.add(RawHttp.send(node.server().address(), "GET", target));
      }
      List<Future<RawHttp.Response>> futures = new ArrayList<>();
      for (RawHttp http : sent) {
        futures.add(readers.submit(http::read));
      }
      whenAllSent.run();
      List<RawHttp.Response> responses = new ArrayList<>();
      for (Future<RawHttp.Response> f : futures) {
        responses.add(f.get(30, TimeUnit.SECONDS));
      }
      return responses;
    } finally {
      readers.shutdownNow();
      for (RawHttp http : sent) {
        http.close();
      }
    }
  }

  @Test
  void truncatedSmallBodyIsA502ForEveryWaiterAndNotCached() throws Exception {
    byte[] body = TestNode.bytes(MIB, 12);
    AtomicBoolean recovered = new AtomicBoolean(false);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.rawTargets.put("/cut/small.bin", truncating(body, recovered, arrived, release));

    List<RawHttp.Response> responses = rawClients(50, "/raw/cut/small.bin", () -> {
      try {
        await(arrived);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      waitersRegistered(50);
      release.countDown();
    });
    for (RawHttp.Response r : responses) {
      // 1 MiB is under the inline limit: answered only once complete and verified (B2).
      assertEquals(502, r.status(), "a short body below the inline limit is a clean 502");
      assertNull(r.header("X-Cache"));
      assertTrue(r.complete());
    }
    int failedAttempts = node.raw().requests("/cut/small.bin");
    assertTrue(failedAttempts >= 1 && failedAttempts <= 2, "one fetch and at most its one retry: " + failedAttempts);

    recovered.set(true);
    RawHttp.Response after = RawHttp.exchange(node.server().address(), "GET", "/raw/cut/small.bin");
    assertEquals(200, after.status());
    assertEquals("MISS", after.header("X-Cache"), "the short body was not cached");
    assertTrue(after.complete());
    assertArrayEquals(body, after.body());
    assertEquals(failedAttempts + 1, node.raw().requests("/cut/small.bin"));
  }

  @Test
  void truncatedStreamedBodyIsNeverEndedAsComplete() throws Exception {
    byte[] body = TestNode.bytes(MIB, 13);
    AtomicBoolean recovered = new AtomicBoolean(false);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.rawTargets.put("/cut/large.bin", truncating(body, recovered, arrived, release));

    List<RawHttp.Response> responses = rawClients(50, "/rawbig/cut/large.bin", () -> {
      try {
        await(arrived);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
      waitersRegistered(50);
      release.countDown();
    });
    for (RawHttp.Response r : responses) {
      // Above the inline limit the body may stream while it downloads; then the connection is
      // aborted, never ended as if complete (B2). An abort may also reset the connection before
      // the client read the head (status 0).
      if (r.status() == 0) {
        assertFalse(r.complete());
      } else if (r.status() == 200) {
        assertFalse(r.complete(), "a 200 whose body is short must not end as complete");
        assertEquals(String.valueOf(MIB), r.header("Content-Length"));
        byte[] prefix = Arrays.copyOf(body, r.body().length);
        assertArrayEquals(prefix, r.body(), "what was streamed is the upstream's bytes");
      } else {
        assertEquals(502, r.status());
        assertNull(r.header("X-Cache"));
      }
    }
    int failedAttempts = node.raw().requests("/cut/large.bin");
    assertTrue(failedAttempts >= 1 && failedAttempts <= 2, "one fetch and at most its one retry: " + failedAttempts);

    recovered.set(true);
    fetchesEnded("rawbig");
    RawHttp.Response after = RawHttp.exchange(node.server().address(), "GET", "/rawbig/cut/large.bin");
    assertEquals(200, after.status());
    assertEquals("MISS", after.header("X-Cache"), "the short body was not cached");
    assertTrue(after.complete());
    assertArrayEquals(body, after.body());
    assertEquals(failedAttempts + 1, node.raw().requests("/cut/large.bin"));
  }

  @Test
  void upstreamSlowerThanTheBudgetGives504AndStillOneUpstreamRequest() throws Exception {
    byte[] body = TestNode.bytes(4096, 14);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch arrived = new CountDownLatch(1);
    node.paths.put("/slow/a", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> futures = send(20, "/slow/slow/a");
    budgetsRunning(20);
    await(arrived); // the fetch's request is at the upstream (its connection may open after the budgets start)
    ticker.advance(BUDGET.minusNanos(1));
    assertEquals(0.0, node.server().metrics().fallthrough.labelValues("slow", "budget").get(), "out of budget too soon");
    // Every due budget has run and asked the entity whether the fetch has begun (W3): it has no
    // status yet, so the 20 waiters are out of budget once the entity's answer is back.
    ticker.advance(Duration.ofNanos(1));
    TestNode.await("20 budget fall-throughs counted", Duration.ofSeconds(20),
        () -> node.server().metrics().fallthrough.labelValues("slow", "budget").get() >= 20.0);
    assertEquals(20.0, node.server().metrics().fallthrough.labelValues("slow", "budget").get(),
        "20 budget fall-throughs counted");
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
      assertEquals(504, r.statusCode());
      assertNull(xCache(r));
    }
    assertEquals(1, node.upstream().requests("/slow/a"), "waiters out of budget do not ask the upstream");

    // C3: nobody waits any more, yet the fetch runs to its end and is committed.
    release.countDown();
    fetchesEnded("slow");
    HttpResponse<byte[]> r = node.get("/slow/slow/a");
    assertEquals(200, r.statusCode());
    assertEquals("HIT", xCache(r));
    assertArrayEquals(body, r.body());
    assertEquals(1, node.upstream().requests("/slow/a"));
  }

  @Test
  void aBodyStillArrivingWhenTheBudgetRunsOutTwiceReachesEveryWaiter() throws Exception {
    // W3: the budget stops when status and headers are known; 4 MiB is under the inline limit,
    // so it is answered only once complete, two budgets after its headers came.
    byte[] body = TestNode.bytes(4 * MIB, 17);
    CountDownLatch halfSent = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/slow/trickled", (exchange, n) -> {
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body, 0, body.length / 2);
      exchange.getResponseBody().flush();
      halfSent.countDown();
      await(release);
      exchange.getResponseBody().write(body, body.length / 2, body.length - body.length / 2);
    });
    int clients = 5;
    List<CompletableFuture<HttpResponse<byte[]>>> futures = send(clients, "/slow/slow/trickled");
    budgetsRunning(clients);
    await(halfSent);
    // The headers were sent; the fetch has begun once the node has read them.
    ArtifactKey key = ArtifactKey.of("slow", node.url("/slow/trickled"));
    TestNode.await("the fetch has begun", Duration.ofSeconds(20), () -> begun(key));
    for (int i = 0; i < 2; i++) {
      ticker.advance(BUDGET);
      // Each budget that ran out asked whether the fetch has begun; it has: armed again.
      budgetsRunning(clients);
      assertFalse(futures.stream().anyMatch(CompletableFuture::isDone), "answered before the body ended");
    }
    release.countDown();
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
    }
    assertEquals(0.0, node.server().metrics().fallthrough.labelValues("slow", "budget").get());
    assertEquals(1, node.upstream().requests("/slow/trickled"));
  }

  /** Asks the key's entity whether its fetch has begun (status and headers known). */
  private boolean begun(ArtifactKey key) {
    return ClusterSharding.get(node.server().system()).entityRefFor(FetchEntity.TYPE_KEY, key.id())
        .<FetchEntity.Begun>ask(replyTo -> new FetchEntity.AskBegun(0, replyTo), Duration.ofSeconds(5))
        .toCompletableFuture().join().begun();
  }

  @Test
  void withBypassWaitersOutOfBudgetFetchDirectlyUncached() throws Exception {
    byte[] body = TestNode.bytes(4096, 15);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch sharedArrived = new CountDownLatch(1);
    node.paths.put("/bypass/a", (exchange, n) -> {
      if (n == 1) {
        sharedArrived.countDown();
        await(release); // the shared fetch is slow; the waiters' own fetches are not
      }
      ok(exchange, body);
    });
    int clients = 5;
    List<CompletableFuture<HttpResponse<byte[]>>> futures = send(clients, "/bypass/bypass/a");
    budgetsRunning(clients);
    // The shared fetch must be the first request the upstream sees (the slow one); on a busy
    // machine its connection could otherwise still be opening when the waiters' own fetches go.
    await(sharedArrived);
    ticker.advance(BUDGET);
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertEquals("BYPASS", xCache(r));
      assertArrayEquals(body, r.body());
    }
    assertEquals(1 + clients, node.upstream().requests("/bypass/a"), "the shared fetch plus one direct fetch per waiter");

    release.countDown();
    fetchesEnded("bypass");
    HttpResponse<byte[]> r = node.get("/bypass/bypass/a");
    assertEquals("HIT", xCache(r), "the shared fetch was committed; the direct ones were not needed");
    assertEquals(1 + clients, node.upstream().requests("/bypass/a"));
  }

  @Test
  void aPageReadDirectlyToResolveAFileIsNotCountedAsARequestOfItsOwn() throws Exception {
    // Observability: one client request, one count in corral_requests_total. The PyPI page a file
    // request reads to find the file's URL runs out of budget and is read directly (bypass); that
    // read is the repository's, not a client's request.
    byte[] wheel = TestNode.bytes(3000, 16);
    String page = """
        {"meta":{"api-version":"1.0"},"name":"counted","files":[{"filename":"counted-1.0-py3-none-any.whl",
         "url":"../../files/counted-1.0-py3-none-any.whl","hashes":{"sha256":"%s"}}]}
        """.formatted(dev.corral.core.key.Sha256.hex(org.apache.pekko.util.ByteString.fromArray(wheel)));
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch sharedArrived = new CountDownLatch(1);
    node.paths.put("/pypi/counted/", (exchange, n) -> {
      if (n == 1) {
        sharedArrived.countDown();
        await(release); // the page's shared fetch is slow; the direct read is not
      }
      exchange.getResponseHeaders().add("Content-Type", "application/vnd.pypi.simple.v1+json");
      FakeUpstream.send(exchange, 200, page.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    });
    node.paths.put("/files/counted-1.0-py3-none-any.whl", (exchange, n) -> ok(exchange, wheel));
    List<CompletableFuture<HttpResponse<byte[]>>> futures =
        send(1, "/pybypass/-/files/counted/counted-1.0-py3-none-any.whl");
    budgetsRunning(1);
    await(sharedArrived);
    ticker.advance(BUDGET);
    // Two waits now: the client's for the file, and the file's fetch's own read of the page (K1:
    // the fetch learns the file's URL and hash itself), which joins the page's shared fetch.
    budgetsRunning(2);
    release.countDown();
    HttpResponse<byte[]> r = futures.get(0).get(20, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertArrayEquals(wheel, r.body());
    assertEquals(2, node.upstream().requests("/pypi/counted/"), "the page's shared fetch and its direct read");
    var requests = node.server().metrics().requests;
    assertEquals(1.0, requests.labelValues("pybypass", "miss").get(), "the client's request");
    assertEquals(0.0, requests.labelValues("pybypass", "bypass").get(), "the page read counted as a request");
    assertEquals(0.0, requests.labelValues("pybypass", "error").get());
    release.countDown();
    fetchesEnded("pybypass");
  }

  /**
   * B1 has no opt-out (issue 13 item 8): a direct fetch after the budget ran out verifies against
   * the digest a fetch of the key would (here the page's sha256, part of a PyPI file's key) and
   * cuts the client's stream before its last byte when the body does not match; a body that
   * matches is passed whole.
   */
  @Test
  void aBypassedBodyThatDoesNotMatchItsDigestNeverReachesTheClientComplete() throws Exception {
    byte[] wheel = TestNode.bytes(300 * 1024, 17);
    String page = """
        {"meta":{"api-version":"1.0"},"name":"verified","files":[{"filename":"verified-1.0-py3-none-any.whl",
         "url":"../../files/verified-1.0-py3-none-any.whl","hashes":{"sha256":"%s"}}]}
        """.formatted(dev.corral.core.key.Sha256.hex(org.apache.pekko.util.ByteString.fromArray(wheel)));
    node.paths.put("/pypi/verified/", (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/vnd.pypi.simple.v1+json");
      FakeUpstream.send(exchange, 200, page.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    });
    bypassedCorruptBodyIsCut("pyverify", "/-/files/verified/verified-1.0-py3-none-any.whl",
        "/files/verified-1.0-py3-none-any.whl", wheel);
  }

  /**
   * The same where the digest is one the fetch learns, not the key's ({@code FetchSources}): a
   * Maven jar's {@code .sha1}, read through the cache by the bypass as by a fetch.
   */
  @Test
  void aBypassedBodyIsVerifiedAgainstTheDigestTheFetchWouldLearn() throws Exception {
    byte[] jar = TestNode.bytes(200 * 1024, 18);
    String sha1 = java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-1").digest(jar));
    node.paths.put("/m2/g/a/1/a-1.jar.sha1", (exchange, n) -> ok(exchange, sha1.getBytes(ISO_8859_1)));
    bypassedCorruptBodyIsCut("m2verify", "/g/a/1/a-1.jar", "/m2/g/a/1/a-1.jar", jar);
  }

  /**
   * {@code good} at {@code upstreamPath}: the shared fetch of {@code /repo/path} is held; a waiter
   * out of budget fetches directly and gets {@code good} with one bit off, then (a second waiter)
   * {@code good} itself; then the shared fetch commits {@code good}.
   */
  private void bypassedCorruptBodyIsCut(String repo, String path, String upstreamPath, byte[] good) throws Exception {
    byte[] corrupt = good.clone();
    corrupt[corrupt.length / 2] ^= 0x01; // same size, one bit off
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch sharedArrived = new CountDownLatch(1);
    AtomicBoolean tampered = new AtomicBoolean(true);
    node.paths.put(upstreamPath, (exchange, n) -> {
      if (n == 1) {
        sharedArrived.countDown();
        await(release); // the shared fetch is slow; the direct ones are not
        ok(exchange, good);
        return;
      }
      ok(exchange, tampered.get() ? corrupt : good);
    });
    String file = "/" + repo + path;

    CompletableFuture<HttpResponse<byte[]>> bad = send(1, file).get(0);
    budgetsRunning(1);
    await(sharedArrived);
    ticker.advance(BUDGET);
    try {
      HttpResponse<byte[]> r = bad.get(20, TimeUnit.SECONDS);
      assertFalse(r.statusCode() == 200 && Arrays.equals(corrupt, r.body()), "the corrupt body reached the client complete");
      assertTrue(r.body().length < corrupt.length, "status " + r.statusCode() + ", " + r.body().length + " bytes");
    } catch (java.util.concurrent.ExecutionException e) {
      // the connection was cut short of the Content-Length: what a client must see
      assertTrue(e.getCause() instanceof java.io.IOException, e.toString());
    }
    assertEquals(2, node.upstream().requests(upstreamPath), "the shared fetch and one direct fetch");

    tampered.set(false);
    CompletableFuture<HttpResponse<byte[]>> matching = send(1, file).get(0);
    budgetsRunning(1);
    ticker.advance(BUDGET);
    HttpResponse<byte[]> r = matching.get(20, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertEquals("BYPASS", xCache(r));
    assertArrayEquals(good, r.body(), "a body that matches is passed whole");

    release.countDown();
    fetchesEnded(repo);
    HttpResponse<byte[]> hit = node.get(file);
    assertEquals("HIT", xCache(hit));
    assertArrayEquals(good, hit.body());
  }

  @Test
  void aBypassedPypiFileIsFetchedFromWhereItsPageSaysItIs() throws Exception {
    // A PyPI file's key is <page URL><filename> (K1), not a URL the upstream serves: a waiter out
    // of budget fetches directly from where the page names the file, as the shared fetch does.
    byte[] wheel = TestNode.bytes(3000, 17);
    String page = """
        {"meta":{"api-version":"1.0"},"name":"direct","files":[{"filename":"direct-1.0-py3-none-any.whl",
         "url":"../../files/direct-1.0-py3-none-any.whl","hashes":{"sha256":"%s"}}]}
        """.formatted(dev.corral.core.key.Sha256.hex(org.apache.pekko.util.ByteString.fromArray(wheel)));
    node.paths.put("/pypi/direct/", (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/vnd.pypi.simple.v1+json");
      FakeUpstream.send(exchange, 200, page.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    });
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch sharedArrived = new CountDownLatch(1);
    node.paths.put("/files/direct-1.0-py3-none-any.whl", (exchange, n) -> {
      if (n == 1) {
        sharedArrived.countDown();
        await(release); // the shared fetch is slow; the direct one is not
      }
      ok(exchange, wheel);
    });
    List<CompletableFuture<HttpResponse<byte[]>>> futures =
        send(1, "/pydirect/-/files/direct/direct-1.0-py3-none-any.whl");
    await(sharedArrived);
    budgetsRunning(1);
    ticker.advance(BUDGET);
    HttpResponse<byte[]> r = futures.get(0).get(20, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertEquals("BYPASS", xCache(r));
    assertArrayEquals(wheel, r.body());
    assertEquals(2, node.upstream().requests("/files/direct-1.0-py3-none-any.whl"), "the shared fetch and the direct one");
    release.countDown();
    fetchesEnded("pydirect");
  }

  @Test
  void notFoundIsSharedThenRememberedForTheNegativeTtl() throws Exception {
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/nf/a", (exchange, n) -> {
      if (n == 1) {
        arrived.countDown();
        await(release);
      }
      FakeUpstream.send(exchange, 404, "no".getBytes());
    });
    List<CompletableFuture<HttpResponse<byte[]>>> futures = send(20, "/up/nf/a");
    await(arrived);
    waitersRegistered(20);
    release.countDown();
    int miss = 0;
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(20, TimeUnit.SECONDS);
      assertEquals(404, r.statusCode());
      if ("MISS".equals(xCache(r))) {
        miss++;
      } else {
        assertTrue(List.of("COALESCED", "NEGATIVE").contains(xCache(r)), xCache(r));
      }
    }
    assertEquals(1, miss);
    assertEquals(1, node.upstream().requests("/nf/a"));

    // The node's ticker moves only when this test moves it, so the not-found is remembered for
    // exactly its TTL however slow the machine: every check below is made, every time.
    HttpResponse<byte[]> again = node.get("/up/nf/a");
    assertEquals(404, again.statusCode());
    assertEquals("NEGATIVE", xCache(again));
    assertEquals(1, node.upstream().requests("/nf/a"), "a remembered not-found does not ask the upstream");

    ticker.advance(NEGATIVE_TTL.minusNanos(1));
    HttpResponse<byte[]> lastMoment = node.get("/up/nf/a");
    assertEquals(404, lastMoment.statusCode());
    assertEquals("NEGATIVE", xCache(lastMoment), "remembered until the TTL has passed");
    assertEquals(1, node.upstream().requests("/nf/a"));

    ticker.advance(Duration.ofNanos(1));
    HttpResponse<byte[]> r = node.get("/up/nf/a");
    assertEquals(404, r.statusCode());
    assertEquals("MISS", xCache(r), "forgotten once the TTL has passed: the upstream is asked again");
    assertEquals(2, node.upstream().requests("/nf/a"));
  }
}
