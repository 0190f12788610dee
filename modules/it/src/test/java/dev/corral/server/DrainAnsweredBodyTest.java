package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SEMANTICS L4 for responses a stopping node has answered but not yet sent whole, to a client that
 * reads slowly (here: not at all until the node is stopping; its receive buffer is 16 KiB). The
 * drain waited for streamed bodies until their source ended, then called Pekko's
 * {@code ServerBinding.terminate}, which fails a connection with no request pending at once and
 * resets it: the bytes still on their way were lost (on a busy machine, a draining node's 4 MiB
 * body, ClusterDrainTest). The node now ends its connections the graceful way first
 * ({@code FrontDoor.closeConnections}). And a response answered but whose streamed body Pekko has
 * not begun (it waits behind another) is counted by what the drain waits for.
 */
class DrainAnsweredBodyTest {
  /** Under the inline limit: answered whole, once fetched. */
  private static final int WHOLE = 7 * 1024 * 1024;
  /** Over it: streamed from disk once stored. */
  private static final int LARGE = 12 * 1024 * 1024;

  private final byte[] whole = TestNode.bytes(WHOLE, 31);
  private final byte[] large = TestNode.bytes(LARGE, 32);
  private final HttpClient client = TestNode.client();
  private FakeUpstream upstream;
  private CorralServer server;

  @AfterEach
  void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  private void start(Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) ->
        TestNode.ok(exchange, exchange.getRequestURI().getPath().endsWith("/large.bin") ? large : whole));
    server = TestNode.start(dir, upstream.url("/"), "", "--drain-timeout", "60s");
  }

  /**
   * Pipelined: the 12 MiB response is answered while the 7 MiB one before it is still on its way,
   * and waits for it. The connection counts as answering for the drain (it did not before).
   */
  @Test
  void aStoppingNodeSendsAResponseItHasAnsweredButNotBegunBeforeItClosesTheConnection(@TempDir Path dir)
      throws Exception {
    start(dir);
    assertEquals(200, TestNode.get(client, server, "/up/d/large.bin").statusCode());
    TestNode.await("the large artifact stored", Duration.ofSeconds(20),
        () -> "HIT".equals(TestNode.xCache(TestNode.get(client, server, "/up/d/large.bin"))));
    double hitsBefore = server.metrics().requests.labelValues("up", "hit").get();
    try (Socket socket = slowClient()) {
      send(socket, "/up/d/whole.bin", "/up/d/large.bin");
      TestNode.await("the large artifact answered", Duration.ofSeconds(30),
          () -> server.metrics().requests.labelValues("up", "hit").get() - hitsBefore == 1);
      assertEquals(1, server.frontDoor().answeringConnections(),
          "the connection counts as answering while a response it has answered is not sent");
      stopAndRead(socket, whole, large);
    }
  }

  /**
   * A streamed body whose source has ended while its last bytes still wait for the client: the
   * drain then finds nothing running, and Pekko's terminate reset the connection (the client had
   * read 12 308 480 of 12 582 912 bytes, then "Connection reset"). Ended the graceful way, the
   * connection's last bytes are written and it is closed, so the client reads them even after the
   * node has stopped.
   */
  @Test
  void theLastBytesOfAStreamedBodyStillOnTheirWayWhenTheNodeStopsReachItsClient(@TempDir Path dir) throws Exception {
    start(dir);
    assertEquals(200, TestNode.get(client, server, "/up/d/large.bin").statusCode());
    TestNode.await("the large artifact stored", Duration.ofSeconds(20),
        () -> "HIT".equals(TestNode.xCache(TestNode.get(client, server, "/up/d/large.bin"))));
    try (Socket socket = slowClient()) {
      send(socket, "/up/d/large.bin");
      TestNode.await("the artifact answered", Duration.ofSeconds(30),
          () -> server.metrics().httpRequestsInFlight.get() == 1);
      CompletableFuture<Void> stopped = stopAsync();
      InputStream in = new BufferedInputStream(socket.getInputStream(), 4 * 1024);
      String head = RawHttp.readHead(in);
      assertTrue(head.startsWith("HTTP/1.1 200"), head);
      // Read all but the body's last 32 KiB (the socket buffers hold them, so its source can end),
      // then nothing until the body's source has ended and the node has stopped altogether. (Read
      // until the source's end, the client sometimes had every byte before the end was counted.)
      byte[] body = new byte[LARGE];
      int read = 0;
      while (read < LARGE - 32 * 1024) {
        read += in.read(body, read, Math.min(4096, LARGE - 32 * 1024 - read));
      }
      TestNode.await("the body's source ended", Duration.ofSeconds(30),
          () -> server.metrics().httpRequestsInFlight.get() == 0);
      stopped.get(60, TimeUnit.SECONDS);
      server = null;
      assertEquals(LARGE - read, in.readNBytes(body, read, LARGE - read), "the body's end after " + read + " bytes");
      assertArrayEquals(large, body);
    }
  }

  /**
   * A miss answered whole (the 7 MiB body in one piece, as its waiters share it) to a client that
   * has read only its head: Pekko takes a whole body at once, so the response counted as sent
   * while most of it still waited in the node for the client's window (3.5 MB of 7 MiB with a
   * client like this one); the drain found nothing answering, the node stopped, and the client's
   * next read was "Connection reset". A body given whole is now handed to Pekko as a stream that
   * ends once its bytes have been written, so the drain waits for them.
   */
  @Test
  void aWholeBodyAnsweredToAClientThatHasReadOnlyItsHeadReachesItAcrossTheStop(@TempDir Path dir) throws Exception {
    start(dir);
    try (Socket socket = slowClient()) {
      send(socket, "/up/d/whole.bin");
      InputStream in = new BufferedInputStream(socket.getInputStream(), 1024);
      String head = RawHttp.readHead(in); // the response has been handed to Pekko
      assertTrue(head.startsWith("HTTP/1.1 200"), head);
      CompletableFuture<Void> stopped = stopAsync();
      // Nothing more read until the stop waits for this response, or is over (as it was, at once).
      CorralServer stopping = server;
      TestNode.await("the stop waiting for the response, or over", Duration.ofSeconds(60),
          () -> stopped.isDone() || stopping.frontDoor().answeringConnections() == 1);
      byte[] body = in.readNBytes(WHOLE);
      assertEquals(WHOLE, body.length, "the body cut after " + body.length + " bytes");
      assertArrayEquals(whole, body);
      stopped.get(60, TimeUnit.SECONDS);
      server = null;
    }
  }

  /** Begins the node's stop; returns once it is draining, with the stop's end. */
  private CompletableFuture<Void> stopAsync() {
    CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
      try {
        server.close();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    TestNode.await("the node draining", Duration.ofSeconds(20), () -> server.node().draining());
    return stopped;
  }

  private Socket slowClient() throws IOException {
    Socket socket = new Socket();
    socket.setReceiveBufferSize(16 * 1024);
    socket.connect(new InetSocketAddress("127.0.0.1", server.address().getPort()), 10_000);
    socket.setSoTimeout(60_000);
    return socket;
  }

  private void send(Socket socket, String... targets) throws IOException {
    StringBuilder pipelined = new StringBuilder();
    for (String target : targets) {
      pipelined.append("GET ").append(target).append(" HTTP/1.1\r\nHost: 127.0.0.1:")
          .append(server.address().getPort()).append("\r\n\r\n");
    }
    socket.getOutputStream().write(pipelined.toString().getBytes(StandardCharsets.ISO_8859_1));
    socket.getOutputStream().flush();
  }

  /** Stops the node and, once it is draining, reads each response whole; the stop then ends. */
  private void stopAndRead(Socket socket, byte[]... bodies) throws Exception {
    CompletableFuture<Void> stopped = stopAsync();
    InputStream in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    for (byte[] expected : bodies) {
      String head = RawHttp.readHead(in);
      assertTrue(head.startsWith("HTTP/1.1 200"), head);
      byte[] body = in.readNBytes(expected.length);
      assertEquals(expected.length, body.length, "a " + expected.length + "-byte body cut after " + body.length);
      assertArrayEquals(expected, body);
    }
    stopped.get(60, TimeUnit.SECONDS);
    server = null;
  }
}
