package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * SEMANTICS L4 on the TLS port, for HTTP/2 and HTTP/1.1 chosen by ALPN, and for HTTP/1.1 alone
 * ({@code --tls-http2 off}): a stopping node sends the last bytes of a response it has answered to
 * a client that reads slowly (the real curl, rate limited), then closes the connection. The TLS
 * port's connections were ended by a byte-level kill switch, which reset them with those bytes
 * still on their way (as Pekko's terminate did on the plain port: DrainAnsweredBodyTest), and
 * {@code --tls-http2 off} went through Pekko's {@code enableHttps}, whose TLS stage closes at the
 * first of the HTTP layer's two ends.
 */
class TlsDrainAnsweredBodyTest {
  /** Streamed from disk once stored, and more than the socket buffers and curl's window hold. */
  private static final int LARGE = 16 * 1024 * 1024;
  private final byte[] large = TestNode.bytes(LARGE, 33);
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

  /**
   * Two slow clients of each protocol at once (with HTTP/2 off, the {@code --http2} ones speak
   * HTTP/1.1): one connection lost its body's end to the old byte-level cut in some runs only
   * (when its last bytes were still in the node's buffers, not yet in the kernel's), so four make
   * the loss near certain.
   */
  @ParameterizedTest
  @ValueSource(strings = {"on", "off"})
  void theLastBytesOfStreamedBodiesStillOnTheirWayWhenTheNodeStopsReachTheirTlsClients(String http2,
      @TempDir Path dir) throws Exception {
    upstream = new FakeUpstream((exchange, n) -> TestNode.ok(exchange, large));
    List<String> args = new ArrayList<>(List.of("--drain-timeout", "60s", "--tls-http2", http2));
    args.addAll(List.of(NodeTls.args()));
    server = TestNode.start(dir, upstream.url("/"), "", args.toArray(new String[0]));
    String url = "https://127.0.0.1:" + server.address().getPort() + "/up/d/large.bin";
    TestNode.await("the large artifact stored", Duration.ofSeconds(30),
        () -> curl(url, dir.resolve("warm.bin"), "--http1.1", "-D", "-").contains("x-cache: hit"));
    // The last warm-up body may be counted as sent only after curl has it all.
    TestNode.await("the warm-up's bodies sent", Duration.ofSeconds(30),
        () -> server.metrics().httpRequestsInFlight.get() == 0);

    List<String> versions = List.of("--http2", "--http1.1", "--http2", "--http1.1");
    CorralServer stopping = server;
    server = null;
    SlowReaders.readWholeAcrossTheStop(stopping, dir, large,
        versions.stream().map(v -> "curl " + v).toList(), (i, out) -> command(url, out, versions.get(i)),
        () -> stopping.metrics().httpRequestsInFlight.get() == versions.size());
  }

  /**
   * An idle TLS connection whose client reads nothing more (a pooled connection of a blocking
   * client, as Maven's): the node's graceful end writes its close notice, and Pekko's TLS stage
   * then waits for the client's, which never comes. The stop held such a connection open until
   * the drain timeout ran out (TlsIT's idle connection: 30 s); it now closes it once everything
   * the node had to send, its close notice included, has gone to TCP.
   */
  @ParameterizedTest
  @ValueSource(strings = {"h2", "http/1.1"})
  void anIdleTlsConnectionWhoseClientNeverAnswersTheCloseDoesNotHoldTheStop(String alpn, @TempDir Path dir)
      throws Exception {
    upstream = new FakeUpstream((exchange, n) -> TestNode.ok(exchange, large));
    List<String> args = new ArrayList<>(List.of("--drain-timeout", "120s"));
    args.addAll(List.of(NodeTls.args()));
    server = TestNode.start(dir, upstream.url("/"), "", args.toArray(new String[0]));
    javax.net.ssl.SSLSocket idle = (javax.net.ssl.SSLSocket) dev.corral.testkit.upstream.TestCertificates
        .context(null, NodeTls.CA).getSocketFactory().createSocket("127.0.0.1", server.address().getPort());
    try (idle) {
      javax.net.ssl.SSLParameters p = idle.getSSLParameters();
      p.setApplicationProtocols(new String[] {alpn});
      idle.setSSLParameters(p);
      idle.setSoTimeout(20_000);
      idle.startHandshake();
      assertEquals(alpn, idle.getApplicationProtocol());
      java.io.OutputStream out = idle.getOutputStream();
      if (alpn.equals("h2")) {
        // The connection preface and an empty SETTINGS frame: an HTTP/2 connection, then silence.
        out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0});
        out.flush();
        TestNode.await("the HTTP/2 connection open", Duration.ofSeconds(30), () -> server.frontDoor().openConnections() == 1);
      } else {
        out.write("GET /-/health/live HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        String head = dev.corral.testkit.RawHttp.readHead(idle.getInputStream());
        assertTrue(head.startsWith("HTTP/1.1 200"), head);
      }
      long start = System.nanoTime();
      server.close();
      server = null;
      long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      assertTrue(seconds < 60, "the stop waited " + seconds + " s for an idle " + alpn + " connection");
    }
  }

  private static List<String> command(String url, Path out, String... more) {
    List<String> command = new ArrayList<>(List.of("curl", "-sS", "--cacert", NodeTls.CA.caCert().toString(),
        "-o", out.toString()));
    command.addAll(List.of(more));
    command.add(url);
    return command;
  }

  /** Runs curl to the end and returns what it printed (headers with {@code -D -}). */
  private static String curl(String url, Path out, String... more) {
    try {
      Process p = new ProcessBuilder(command(url, out, more)).redirectErrorStream(true).start();
      String printed = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).toLowerCase();
      p.waitFor(30, TimeUnit.SECONDS);
      return printed;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
