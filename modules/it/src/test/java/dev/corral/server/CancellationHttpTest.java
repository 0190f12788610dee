package dev.corral.server;

import static dev.corral.testkit.TestNode.ok;
import static dev.corral.testkit.TestNode.await;
import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.io.InputStream;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS C1-C3 over real HTTP: a client that hangs up while waiting on a slow fetch is noticed
 * from its connection's termination (its waiter leaves the node's cancel registry), the other
 * waiters still get the whole body, and the fetch runs to its end and is committed.
 *
 * <p>The node runs on manual time that no test moves: no waiter's budget can run out and no ask
 * can be sent again, so a waiter that leaves was ended by its client's close and nothing else.
 * How soon after the close (C1: within 100 ms) is a latency, measured, not asserted here.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CancellationHttpTest {
  /** The node's time: it stands still (budgets, re-asks, tombstones). */
  private final ManualTicker ticker = new ManualTicker();

  // "big" streams bodies above 64 KiB to its waiters while they download.
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().manualTime(new ManualScheduler(ticker)).config(n -> """
      corral.repos.big { type = generic, url = "%s", inline-limit = 64KiB }
      """.formatted(n.url("/")));

  /** Waiters registered on the node beyond those of earlier tests (none, when they pass). */
  private int base;

  @BeforeEach
  void baseline() {
    base = node.server().cancels().registrations();
  }

  private int registered() {
    return node.server().cancels().registrations() - base;
  }

  private void registrations(int n) {
    TestNode.await(n + " waiters registered", Duration.ofSeconds(20), () -> registered() == n);
  }

  private double cancelledAnswers() {
    // A cancelled waiter's request is counted once, as an error (its 503 goes nowhere).
    return node.server().metrics().requests.labelValues("up", "error").get();
  }

  @Test
  void aClientHangingUpLeavesAtOnceAndTheOtherWaiterGetsTheBody() throws Exception {
    byte[] body = TestNode.bytes(256 * 1024, 21);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    CountDownLatch answered = new CountDownLatch(1);
    node.paths.put("/c/one.bin", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body);
      answered.countDown();
    });
    double errorsBefore = cancelledAnswers();

    RawHttp leaving = RawHttp.send(node.server().address(), "GET", "/up/c/one.bin");
    await(arrived);
    registrations(1);
    CompletableFuture<HttpResponse<byte[]>> staying = node.getAsync("/up/c/one.bin");
    registrations(2);

    long nodeTime = ticker.read();
    leaving.close();
    // Only the close can end this waiter: the node's time does not move, so its budget cannot run out.
    TestNode.await("the hung-up client's waiter left", Duration.ofSeconds(20), () -> registered() == 1);
    TestNode.await("the cancelled request was answered", Duration.ofSeconds(20),
        () -> cancelledAnswers() == errorsBefore + 1);
    assertEquals(nodeTime, ticker.read(), "no node time passed: no timer of the node ended the wait");
    assertTrue(!staying.isDone(), "the other waiter still waits for the shared fetch");

    release.countDown();
    HttpResponse<byte[]> r = staying.get(20, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertArrayEquals(body, r.body());
    assertEquals("COALESCED", xCache(r));
    assertEquals(1, node.upstream().requests("/c/one.bin"));
    await(answered);
    HttpResponse<byte[]> hit = node.get("/up/c/one.bin");
    assertEquals("HIT", xCache(hit));
    assertEquals(1, node.upstream().requests("/c/one.bin"));
  }

  @Test
  void theFetchIsCommittedWhenEveryWaiterLeft() throws Exception {
    byte[] body = TestNode.bytes(64 * 1024, 22);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/c/orphan.bin", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body);
    });
    RawHttp leaving = RawHttp.send(node.server().address(), "GET", "/up/c/orphan.bin");
    await(arrived);
    registrations(1);
    leaving.close();
    TestNode.await("the only waiter left", Duration.ofSeconds(20), () -> registered() == 0);

    release.countDown();
    TestNode.await("the fetch ended", Duration.ofSeconds(20),
        () -> node.server().metrics().inflightFetches.labelValues("up").get() == 0);
    HttpResponse<byte[]> r = node.get("/up/c/orphan.bin");
    assertEquals(200, r.statusCode());
    assertEquals("HIT", xCache(r), "C3: the fetch ran to its end and warmed the cache");
    assertArrayEquals(body, r.body());
    assertEquals(1, node.upstream().requests("/c/orphan.bin"));
  }

  /**
   * B3, C3: a client that hangs up halfway through a streamed body does not disturb another.
   *
   * <p>Pekko HTTP notices such a hang-up only when it next writes to the connection (while the
   * stream is idle, waiting for the download, nothing is read from the connection), so the
   * upstream sends its body in three parts: the client hangs up after the first, the second makes
   * Corral write and release the dead stream, the third completes the download.
   */
  @Test
  void aClientLeavingMidStreamDoesNotDisturbAnother() throws Exception {
    byte[] body = TestNode.bytes(1024 * 1024, 23);
    int half = body.length / 2;
    int more = half + 64 * 1024;
    CountDownLatch second = new CountDownLatch(1);
    CountDownLatch third = new CountDownLatch(1);
    node.paths.put("/c/stream.bin", (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/x-test");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body, 0, half);
      exchange.getResponseBody().flush();
      await(second);
      exchange.getResponseBody().write(body, half, more - half);
      exchange.getResponseBody().flush();
      await(third);
      exchange.getResponseBody().write(body, more, body.length - more);
    });
    RawHttp leaving = RawHttp.send(node.server().address(), "GET", "/big/c/stream.bin");
    InputStream in = leaving.input();
    // Read the head and the first bytes of the body, then hang up mid-stream.
    byte[] some = new byte[1024];
    int got = 0;
    while (got < some.length) {
      int n = in.read(some, got, some.length - got);
      assertTrue(n > 0, "the streamed body started");
      got += n;
    }
    CompletableFuture<HttpResponse<byte[]>> staying = node.getAsync("/big/c/stream.bin");
    // Probe: the download's writer and both readers hold it.
    TestNode.await("both clients stream the download", Duration.ofSeconds(20),
        () -> node.server().node().downloads().references() == 3);
    leaving.close();
    second.countDown();
    TestNode.await("the hung-up client's stream was released at its next write", Duration.ofSeconds(20),
        () -> node.server().node().downloads().references() == 2);
    assertTrue(!staying.isDone());

    third.countDown();
    HttpResponse<byte[]> r = staying.get(20, TimeUnit.SECONDS);
    assertEquals(200, r.statusCode());
    assertArrayEquals(body, r.body());
    assertEquals("COALESCED", xCache(r));
    TestNode.await("the fetch ended", Duration.ofSeconds(20),
        () -> node.server().metrics().inflightFetches.labelValues("big").get() == 0);
    HttpResponse<byte[]> hit = node.get("/big/c/stream.bin");
    assertEquals("HIT", xCache(hit));
    assertArrayEquals(body, hit.body());
    assertEquals(1, node.upstream().requests("/c/stream.bin"));
  }

  /** C1 for a client that resets its connection (RST) instead of closing it (FIN). */
  @Test
  void aClientResettingItsConnectionLeavesAtOnce() throws Exception {
    byte[] body = TestNode.bytes(1024, 24);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/c/reset.bin", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body);
    });
    RawHttp leaving = RawHttp.send(node.server().address(), "GET", "/up/c/reset.bin");
    await(arrived);
    registrations(1);
    leaving.reset();
    // Only the reset can end this waiter: the node's time does not move.
    TestNode.await("the reset client's waiter left", Duration.ofSeconds(20), () -> registered() == 0);
    release.countDown();
    TestNode.await("the fetch ended", Duration.ofSeconds(20),
        () -> node.server().metrics().inflightFetches.labelValues("up").get() == 0);
    assertEquals("HIT", xCache(node.get("/up/c/reset.bin")));
    assertEquals(1, node.upstream().requests("/c/reset.bin"));
  }
}
