package dev.corral.server;

import static dev.corral.testkit.TestNode.await;
import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS F1, W1, K2 over real HTTP: many clients of one node, the upstream counting what
 * reaches it. Upstream responses are held on latches the tests release once every client waits
 * (probed through the node's cancel registry: one registration per waiter), so "coalesced" is
 * proven, not hoped for.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CoalescingHttpTest {
  /**
   * The node; each test installs its own paths on its fake upstream. On manual time: no budget
   * runs out and no ask is sent again while a test holds a fetch, however long that takes.
   */
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().manualTime(new ManualScheduler(new ManualTicker()));

  private static void ok(HttpExchange exchange, byte[] body, String etag) throws java.io.IOException {
    exchange.getResponseHeaders().add("Content-Type", "application/x-test");
    exchange.getResponseHeaders().add("ETag", etag);
    exchange.getResponseHeaders().add("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT");
    FakeUpstream.send(exchange, 200, body);
  }

  /** Waits until {@code n} waiters of this node are registered (each waits on a fetch). */
  private void waitersRegistered(int n) {
    TestNode.await(n + " waiters registered", Duration.ofSeconds(20), () -> node.server().cancels().registrations() >= n);
  }

  @Test
  void twoHundredClientsOfOneMissingKeyCauseOneUpstreamRequest() throws Exception {
    byte[] body = TestNode.bytes(1024 * 1024, 1);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/s1/big.bin", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body, "\"big-1\"");
    });

    List<CompletableFuture<HttpResponse<byte[]>>> futures = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      futures.add(node.getAsync("/up/s1/big.bin"));
    }
    await(arrived);
    waitersRegistered(200);
    release.countDown();

    int miss = 0;
    int coalesced = 0;
    int hit = 0;
    for (CompletableFuture<HttpResponse<byte[]>> f : futures) {
      HttpResponse<byte[]> r = f.get(60, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
      assertEquals(String.valueOf(body.length), r.headers().firstValue("Content-Length").orElse(null));
      assertEquals("application/x-test", r.headers().firstValue("Content-Type").orElse(null));
      assertEquals("\"big-1\"", r.headers().firstValue("ETag").orElse(null));
      switch (xCache(r)) {
        case "MISS" -> miss++;
        case "COALESCED" -> coalesced++;
        case "HIT" -> hit++;
        default -> throw new AssertionError("unexpected X-Cache " + xCache(r));
      }
    }
    assertEquals(1, node.upstream().requests("/s1/big.bin"), "upstream requests");
    assertEquals(1, miss, "MISS answers");
    assertEquals(199, coalesced + hit, "COALESCED + HIT answers");
    assertTrue(coalesced > 0, "the clients waited together, so most must have joined the fetch");

    HttpResponse<byte[]> after = node.get("/up/s1/big.bin");
    assertEquals("HIT", xCache(after));
    assertArrayEquals(body, after.body());
    assertEquals(1, node.upstream().requests("/s1/big.bin"));
  }

  @Test
  void fiftyKeysTimesTwentyClientsCauseFiftyUpstreamRequests() throws Exception {
    int keys = 50;
    int clientsPerKey = 20;
    Function<Integer, byte[]> bodyOf = k -> ("body of key " + k + "\n").repeat(k + 1).getBytes();
    // Every upstream response waits until all 50 fetches reached the upstream: they run in parallel.
    CountDownLatch allArrived = new CountDownLatch(keys);
    for (int k = 0; k < keys; k++) {
      int key = k;
      node.paths.put("/s2/k" + k, (exchange, n) -> {
        allArrived.countDown();
        await(allArrived);
        ok(exchange, bodyOf.apply(key), "\"k" + key + "\"");
      });
    }
    // Round by round (every key once per round), at most 250 requests open at a time.
    Semaphore open = new Semaphore(250);
    List<CompletableFuture<HttpResponse<byte[]>>> futures = new ArrayList<>();
    List<Integer> keyOf = new ArrayList<>();
    for (int round = 0; round < clientsPerKey; round++) {
      for (int k = 0; k < keys; k++) {
        open.acquire();
        futures.add(node.getAsync("/up/s2/k" + k).whenComplete((r, e) -> open.release()));
        keyOf.add(k);
      }
    }
    int misses = 0;
    for (int i = 0; i < futures.size(); i++) {
      HttpResponse<byte[]> r = futures.get(i).get(60, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(bodyOf.apply(keyOf.get(i)), r.body());
      if ("MISS".equals(xCache(r))) {
        misses++;
      }
    }
    for (int k = 0; k < keys; k++) {
      assertEquals(1, node.upstream().requests("/s2/k" + k), "upstream requests for key " + k);
    }
    assertEquals(keys, misses, "one MISS per key");
  }

  /**
   * W1: waiters are woken by message. 50 clients of a 1 KiB key, the upstream answering once all
   * wait: every one gets the leader's bytes from the one upstream request, and the node sent ONE
   * Join for all of them, so nobody was answered by asking (or polling) again: the reply to that
   * one ask woke them all. How close together they finish is a speed figure, measured by
   * bench/run.sh (S1s), not asserted here. Raw sockets, so each request is known to be sent.
   */
  @Test
  void everyWaiterIsAnsweredWithTheLeader() throws Exception {
    int clients = 50;
    byte[] body = TestNode.bytes(1024, 3);
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put("/w1/small.bin", (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, body, "\"small\"");
    });
    long joinsBefore = node.server().waiters().joinsSent();
    List<RawHttp> sent = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      sent.add(RawHttp.send(node.server().address(), "GET", "/up/w1/small.bin"));
    }
    ExecutorService readers = Executors.newFixedThreadPool(clients);
    try {
      List<Future<RawHttp.Response>> responses = new ArrayList<>();
      for (RawHttp http : sent) {
        responses.add(readers.submit(http::read));
      }
      await(arrived);
      waitersRegistered(clients);
      release.countDown();
      for (Future<RawHttp.Response> f : responses) {
        RawHttp.Response r = f.get(30, TimeUnit.SECONDS);
        assertEquals(200, r.status());
        assertArrayEquals(body, r.body());
      }
      assertEquals(1, node.upstream().requests("/w1/small.bin"));
      // No node time passed, so no ask timed out into a re-ask: any further Join is a waiter's own.
      assertEquals(1, node.server().waiters().joinsSent() - joinsBefore,
          "one Join answered all 50 waiters; more means some were answered by asking again");
    } finally {
      readers.shutdownNow();
      for (RawHttp http : sent) {
        http.close();
      }
    }
  }

  /** K2: 8 distinct keys asked at once run 8 fetches at once; none waits for another. */
  @Test
  void distinctKeysDoNotWaitOnEachOther() throws Exception {
    int keys = 8;
    CountDownLatch allArrived = new CountDownLatch(keys);
    for (int k = 0; k < keys; k++) {
      byte[] body = ("key " + k).getBytes();
      node.paths.put("/k2/k" + k, (exchange, n) -> {
        allArrived.countDown();
        // Held until all 8 fetches are at the upstream; serialised fetches would never get there.
        if (!allArrived.await(20, TimeUnit.SECONDS)) {
          FakeUpstream.send(exchange, 503, new byte[0]);
          return;
        }
        ok(exchange, body, "\"k2\"");
      });
    }
    List<CompletableFuture<HttpResponse<byte[]>>> futures = new ArrayList<>();
    for (int k = 0; k < keys; k++) {
      futures.add(node.getAsync("/up/k2/k" + k));
    }
    for (int k = 0; k < keys; k++) {
      HttpResponse<byte[]> r = futures.get(k).get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), "key " + k);
      assertEquals("key " + k, new String(r.body()));
      assertEquals("MISS", xCache(r));
      assertEquals(1, node.upstream().requests("/k2/k" + k));
    }
  }
}
