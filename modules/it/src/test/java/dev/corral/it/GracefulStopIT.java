package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * SEMANTICS L4 on a real process: SIGTERM stops taking requests, lets in-flight fetches and their
 * responses finish (within the drain timeout), then the process exits by itself.
 *
 * <p>Ordering without sleeps: the upstream holds each fetch on a latch after sending the first
 * part; the test sends SIGTERM, waits until the node refuses new connections, and only then
 * releases the upstream. Whatever the node does with its in-flight work from then on is what the
 * test checks.
 */
class GracefulStopIT {
  private static final int LARGE = 12 * 1024 * 1024; // above the 8 MiB inline limit: streamed
  private static final int SMALL = 512 * 1024;        // answered only once complete
  private static final int FIRST_PART = 1024 * 1024;
  private static final Duration DRAIN = Duration.ofSeconds(20);

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private final byte[] large = CrashRestartIT.bytes(11, LARGE);
  private final byte[] small = CrashRestartIT.bytes(12, SMALL);
  private final CountDownLatch release = new CountDownLatch(1);
  private final CountDownLatch smallArrived = new CountDownLatch(1);
  private final CountDownLatch largeArrived = new CountDownLatch(1);
  private FakeUpstream upstream;

  @AfterEach
  void stopUpstream() {
    release.countDown();
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void sigtermLetsEveryWaitingClientFinishThenExitsAndRefusesNewRequests() throws Exception {
    upstream = new FakeUpstream(this::answer);
    Path dataDir = temp.resolve("data");
    String repo = "up=generic:" + upstream.url("/");
    CorralProcess node = processes.serve("drain", List.of(), dataDir, List.of("--drain-timeout", DRAIN.toSeconds() + "s"), repo);
    String base = node.awaitListening(Duration.ofSeconds(60));

    // One waiter on a small body: its response has not begun (the upstream holds the fetch).
    CompletableFuture<HttpResponse<byte[]>> smallClient =
        Http.CLIENT.sendAsync(Http.get(base + "/up/small.bin"), HttpResponse.BodyHandlers.ofByteArray());
    assertTrue(smallArrived.await(30, TimeUnit.SECONDS), "the small fetch reached the upstream");

    // Several waiters on a large body: each has its status and headers, the body is still coming.
    List<HttpResponse<InputStream>> largeClients = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      HttpResponse<InputStream> r = Http.CLIENT
          .sendAsync(Http.get(base + "/up/large.bin"), HttpResponse.BodyHandlers.ofInputStream())
          .get(30, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      largeClients.add(r);
    }
    assertTrue(largeArrived.await(30, TimeUnit.SECONDS));
    // A kept-alive connection, idle when the stop begins.
    int port = URI.create(base).getPort();
    RawHttp idle = RawHttp.keepAlive(new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(30));
    assertEquals(200, idle.get("/-/health/live").status());

    long stopAt = System.nanoTime();
    node.terminate();
    Await.until(DRAIN, () -> "the stopping node still accepts connections", () -> refuses(port));
    assertTrue(node.isAlive(), "the node waits for its in-flight fetches\n" + node.output());
    try (idle) {
      assertEquals(503, idle.get("/up/other.bin").status(),
          "a new request on an open connection is refused while the node drains");
    }
    release.countDown();

    for (HttpResponse<InputStream> r : largeClients) {
      try (InputStream body = r.body()) {
        assertArrayEquals(large, body.readAllBytes(), "every streaming client gets the whole body");
      }
    }
    HttpResponse<byte[]> s = smallClient.get(DRAIN.toSeconds(), TimeUnit.SECONDS);
    assertEquals(200, s.statusCode());
    assertArrayEquals(small, s.body(), "the waiting client gets the whole body");

    Duration left = DRAIN.minusNanos(System.nanoTime() - stopAt);
    node.awaitExit(left.isNegative() ? Duration.ZERO : left);
    assertTrue(refuses(port), "a request after the stop is refused");
    assertThrows(ConnectException.class, () -> Http.getBytes(base + "/up/small.bin"));
    assertEquals(2, upstream.requests(), "one fetch per artifact, none for the refused request");

    // The drained fetches were committed before the exit: a restart serves both from disk.
    assertServedFromDiskAfterRestart(dataDir, repo);
  }

  @Test
  void sigtermLetsAFetchWhoseClientLeftFinishAndCommit() throws Exception {
    upstream = new FakeUpstream(this::answer);
    Path dataDir = temp.resolve("data");
    String repo = "up=generic:" + upstream.url("/");
    CorralProcess node = processes.serve("drain-orphan", List.of(), dataDir,
        List.of("--drain-timeout", DRAIN.toSeconds() + "s"), repo);
    String base = node.awaitListening(Duration.ofSeconds(60));
    int port = URI.create(base).getPort();

    // A client asks for both, reads the large one's status line and leaves: the fetches go on (C3).
    InetSocketAddress address = new InetSocketAddress("127.0.0.1", port);
    try (RawHttp client = RawHttp.send(address, "GET", "/up/large.bin")) {
      String status = new String(client.input().readNBytes(12), StandardCharsets.US_ASCII);
      assertEquals("HTTP/1.1 200", status);
    }
    try (RawHttp client = RawHttp.send(address, "GET", "/up/small.bin")) {
      assertTrue(smallArrived.await(30, TimeUnit.SECONDS), "the small fetch reached the upstream");
    }
    assertTrue(largeArrived.await(30, TimeUnit.SECONDS));

    long stopAt = System.nanoTime();
    node.terminate();
    Await.until(DRAIN, () -> "the stopping node still accepts connections", () -> refuses(port));
    assertTrue(node.isAlive(), "the node waits for its in-flight fetches\n" + node.output());
    release.countDown();
    Duration left = DRAIN.minusNanos(System.nanoTime() - stopAt);
    node.awaitExit(left.isNegative() ? Duration.ZERO : left);
    assertEquals(2, upstream.requests());
    // The upstream connection pool was in use moments before: the stop closes it before the actor
    // system ends, rather than logging it as "shut down unexpectedly".
    String afterStop = node.stdout().substring(node.stdout().indexOf("Running CoordinatedShutdown"));
    assertTrue(!afterStop.contains("ERROR"), afterStop);

    assertServedFromDiskAfterRestart(dataDir, repo);
  }

  private void assertServedFromDiskAfterRestart(Path dataDir, String repo) throws Exception {
    int before = upstream.requests();
    CorralProcess again = processes.serve("drain-restart", List.of(), dataDir, List.of(), repo);
    String base = again.awaitListening(Duration.ofSeconds(60));
    for (String name : List.of("small", "large")) {
      HttpResponse<byte[]> r = Http.getBytes(base + "/up/" + name + ".bin");
      assertEquals(200, r.statusCode(), name);
      assertEquals("HIT", Http.xCache(r), name + ": the drained fetch was committed before the exit\n" + again.output());
      assertArrayEquals(name.equals("small") ? small : large, r.body(), name);
    }
    assertEquals(before, upstream.requests(), "hits ask the upstream nothing");
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    byte[] body = path.equals("/large.bin") ? large : path.equals("/small.bin") ? small : null;
    if (body == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.sendResponseHeaders(200, body.length);
    OutputStream out = exchange.getResponseBody();
    int first = Math.min(FIRST_PART, body.length / 2);
    out.write(body, 0, first);
    out.flush();
    (body == large ? largeArrived : smallArrived).countDown();
    if (!release.await(120, TimeUnit.SECONDS)) {
      throw new IOException("never released");
    }
    out.write(body, first, body.length - first);
    out.flush();
  }

  /** True when a new TCP connection to the port is refused. */
  private static boolean refuses(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
      return false;
    } catch (ConnectException refused) {
      return true;
    } catch (IOException other) {
      return false;
    }
  }
}
