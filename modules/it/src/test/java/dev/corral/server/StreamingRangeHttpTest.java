package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Ranges and conditionals on a body that is still downloading (issue 13 item 13): once the
 * status and headers of a large download are known, a request for its key is answered from the
 * growing download. A {@code Range} within what has arrived is a 206 with those bytes at once; one
 * beyond it is a 206 whose bytes come as they arrive; one past the end is a 416; an
 * {@code If-None-Match} that matches the upstream's ETag is a 304. All of it while the upstream
 * still holds the rest of the body, which the fake upstream sends only when the test lets it.
 *
 * <p>The node's time stands still (no budget runs out while the upstream is held).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StreamingRangeHttpTest {
  private static final int KIB = 1024;

  // "big" streams bodies above 64 KiB to its waiters while they download.
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().manualTime(new ManualScheduler(new ManualTicker()))
      .config(n -> """
          corral.repos.big { type = generic, url = "%s", inline-limit = 64KiB }
          """.formatted(n.url("/")));

  @Test
  void rangesAndConditionalsAreAnsweredFromABodyStillDownloading() throws Exception {
    byte[] body = TestNode.bytes(1024 * KIB, 31);
    int firstPart = 256 * KIB;
    CountDownLatch rest = new CountDownLatch(1);
    node.paths.put("/s/a.bin", (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/x-test");
      exchange.getResponseHeaders().add("ETag", "\"v1\"");
      exchange.sendResponseHeaders(200, body.length);
      OutputStream out = exchange.getResponseBody();
      out.write(body, 0, firstPart);
      out.flush();
      TestNode.await(rest); // the rest is held until the test has asked its questions
      out.write(body, firstPart, body.length - firstPart);
      out.close();
    });
    try {
      // The leader reads the first 128 KiB: they have arrived on the node (readers follow its file).
      HttpResponse<InputStream> leader = node.client().send(
          HttpRequest.newBuilder(TestNode.uri(node.server(), "/big/s/a.bin")).GET().build(),
          HttpResponse.BodyHandlers.ofInputStream());
      assertEquals(200, leader.statusCode());
      assertEquals("MISS", xCache(leader));
      byte[] head = leader.body().readNBytes(128 * KIB);
      assertArrayEquals(Arrays.copyOf(body, 128 * KIB), head);

      // Within what has arrived: the whole part, while the upstream still holds the rest.
      // (Each status is read before the body: a whole body would wait for the held rest.)
      HttpResponse<InputStream> inside = open("Range", "bytes=1000-50999");
      assertEquals(206, inside.statusCode());
      assertEquals("bytes 1000-50999/" + body.length, inside.headers().firstValue("Content-Range").orElse(null));
      assertEquals("COALESCED", xCache(inside));
      try (InputStream in = inside.body()) {
        assertArrayEquals(Arrays.copyOfRange(body, 1000, 51000), in.readAllBytes());
      }

      // Past the end of the announced length: 416, at once.
      HttpResponse<InputStream> past = open("Range", "bytes=" + body.length + "-");
      assertEquals(416, past.statusCode());
      assertEquals("bytes */" + body.length, past.headers().firstValue("Content-Range").orElse(null));
      past.body().close();

      // The ETag is known with the headers: a matching If-None-Match is a 304 now.
      HttpResponse<InputStream> same = open("If-None-Match", "\"v1\"");
      assertEquals(304, same.statusCode());
      try (InputStream in = same.body()) {
        assertEquals(0, in.readAllBytes().length);
      }

      // Beyond what has arrived: a 206 whose bytes come when the upstream sends them.
      HttpResponse<InputStream> beyond = open("Range", "bytes=900000-900999");
      assertEquals(206, beyond.statusCode());
      assertEquals("bytes 900000-900999/" + body.length, beyond.headers().firstValue("Content-Range").orElse(null));
      CompletableFuture<byte[]> beyondBody = CompletableFuture.supplyAsync(() -> {
        try (InputStream in = beyond.body()) {
          return in.readAllBytes();
        } catch (java.io.IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
      assertFalse(beyondBody.isDone(), "bytes the upstream has not sent yet cannot have been served");
      assertEquals(1, node.upstream().requests("/s/a.bin"));

      rest.countDown();
      assertArrayEquals(Arrays.copyOfRange(body, 900_000, 901_000), beyondBody.get(20, TimeUnit.SECONDS));
      try (InputStream in = leader.body()) {
        assertArrayEquals(Arrays.copyOfRange(body, 128 * KIB, body.length), in.readAllBytes());
      }
      // The last byte of a range waits for the whole body's verification, like a whole body's.
      HttpResponse<byte[]> tail = node.get("/big/s/a.bin", "Range", "bytes=-10");
      assertEquals(206, tail.statusCode());
      assertArrayEquals(Arrays.copyOfRange(body, body.length - 10, body.length), tail.body());
      assertEquals(1, node.upstream().requests("/s/a.bin"));
    } finally {
      rest.countDown();
    }
  }

  /** A GET of the streaming key with one header; returns when the status and headers are in. */
  private HttpResponse<InputStream> open(String header, String value) throws Exception {
    return node.client().send(HttpRequest.newBuilder(TestNode.uri(node.server(), "/big/s/a.bin"))
        .header(header, value).GET().build(), HttpResponse.BodyHandlers.ofInputStream());
  }
}
