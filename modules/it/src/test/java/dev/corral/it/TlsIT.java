package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTPS on the client port of a real Corral process (docs/security.md, "TLS"): HTTP/2 by ALPN and
 * HTTP/1.1 beside it with the real {@code curl}, the real {@code npm} trusting the node's private
 * CA through {@code --cafile} (and refusing the node without it), and a renewed certificate taken
 * by new connections without a restart while a broken renewal is ignored.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class TlsIT {
  private Path work;
  private TestCertificates ca;
  private Path cert;
  private Path key;
  private FixtureRegistry fixture;
  private CorralProcess node;
  private String corral;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    work = dir;
    ClientCommand.require("curl", "curl", "TlsIT");
    ca = TestCertificates.newCa(work.resolve("certs"), "corral");
    cert = work.resolve("tls/tls.crt");
    key = work.resolve("tls/tls.key");
    Files.createDirectories(cert.getParent());
    ca.leaf("first", KeyFormat.RSA_PKCS1, cert, key);
    NpmClientIT.pack(work.resolve("packed"));
    fixture = NpmClientIT.startFixture(work.resolve("upstream"));
    node = CorralProcess.serve("tls", List.of(), work.resolve("data"),
        List.of("--tls-cert", cert.toString(), "--tls-key", key.toString(), "--header-read-timeout", "3s"),
        "npm=npm:" + fixture.url() + "/");
    corral = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  private ClientCommand.Result curl(String... args) throws Exception {
    List<String> cmd = new java.util.ArrayList<>(List.of("curl", "-sS", "--cacert", ca.caCert().toString(),
        "-o", "/dev/null", "-w", "%{http_version} %{http_code}"));
    cmd.addAll(List.of(args));
    return ClientCommand.run(work, Map.of(), Duration.ofSeconds(30), cmd);
  }

  @Test
  @Order(1)
  void curlNegotiatesHttp2AndHttp11() throws Exception {
    assertTrue(corral.startsWith("https://127.0.0.1:"), corral);
    assertEquals("2 200", curl("--http2", corral + "/-/health/live").ok().output().trim());
    assertEquals("1.1 200", curl("--http1.1", corral + "/-/health/live").ok().output().trim());
    // A client that does not trust the node's CA is refused by its own TLS check.
    ClientCommand.Result untrusted = ClientCommand.run(work, Map.of(), Duration.ofSeconds(30),
        List.of("curl", "-sS", "-o", "/dev/null", corral + "/-/health/live"));
    assertNotEquals(0, untrusted.exit(), untrusted.output());
  }

  @Test
  @Order(2)
  void npmInstallsOverHttpsWithTheNodesCaAsCafile() throws Exception {
    String repo = corral + "/npm";
    ClientCommand.Result refused = NpmClientIT.install(repo, work.resolve("no-ca"), work.resolve("no-ca-cache"),
        "--fetch-retries", "0");
    assertNotEquals(0, refused.exit(), "npm without the CA must refuse the node\n" + refused.output());

    NpmClientIT.install(repo, work.resolve("app"), work.resolve("app-cache"), "--cafile", ca.caCert().toString()).ok();
    // The packuments' tarball links were rewritten to the node's https URL and installed from it.
    NpmClientIT.assertInstalled(repo, work.resolve("app"));
    NpmClientIT.assertOnlyCorralAskedTheFixture(fixture);
  }

  private String servedSubject() throws Exception {
    SSLContext trusting = TestCertificates.context(null, ca);
    URI uri = URI.create(corral);
    try (SSLSocket s = (SSLSocket) trusting.getSocketFactory().createSocket("127.0.0.1", uri.getPort())) {
      s.setSoTimeout(10_000);
      s.startHandshake();
      return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
    }
  }

  @Test
  @Order(3)
  void aRenewedCertificateReachesNewConnectionsWithoutARestartAndABrokenOneDoesNot() throws Exception {
    assertEquals("CN=first", servedSubject());
    ca.leaf("renewed", KeyFormat.EC_PKCS8, cert, key);
    Await.until(Duration.ofSeconds(20), () -> "the renewed certificate was not served\n" + node.output(),
        () -> servedSubject().equals("CN=renewed"));
    // The line is written just after the new pair is in use (and logging is asynchronous).
    Await.until(Duration.ofSeconds(20), () -> "the reload was not logged\n" + node.output(),
        () -> node.stdout().contains("TLS certificate reloaded"));

    Files.writeString(cert, "-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n");
    Await.until(Duration.ofSeconds(20), () -> "the broken renewal was not reported\n" + node.output(),
        () -> {
          servedSubject(); // a handshake makes the node look at the files
          return node.output().contains("TLS certificate not reloaded");
        });
    assertEquals("CN=renewed", servedSubject());
    assertEquals("2 200", curl("--http2", corral + "/-/health/live").ok().output().trim());
  }

  /**
   * With {@code --tls-http2 off} the node serves HTTP/1.1 over TLS through its own per-connection
   * flow: the header-read timeout cuts a client that completes the handshake and then trickles
   * its request head, while curl is served over HTTP/1.1.
   */
  @Test
  @Order(4)
  void withoutHttp2ATricklingTlsClientIsCutByTheHeaderReadTimeout() throws Exception {
    // The files test 3 left broken: a node refuses to start on them, with one line naming the file.
    try (CorralProcess refused = CorralProcess.serve("tls-broken", List.of(), work.resolve("data-broken"),
        List.of("--tls-cert", cert.toString(), "--tls-key", key.toString()))) {
      AssertionError e = org.junit.jupiter.api.Assertions.assertThrows(AssertionError.class,
          () -> refused.awaitListening(Duration.ofSeconds(60)));
      assertTrue(e.getMessage().contains("corral: --tls-cert, --tls-key: " + cert + ": not a valid certificate"),
          e.getMessage());
    }
    TestCertificates.Pair h1 = ca.leaf("h1", KeyFormat.EC_SEC1);
    try (CorralProcess plainH1 = CorralProcess.serve("tls-h1", List.of(), work.resolve("data-h1"),
        List.of("--tls-cert", h1.cert().toString(), "--tls-key", h1.key().toString(), "--tls-http2", "off",
            "--header-read-timeout", "2s"))) {
      String base = plainH1.awaitListening(Duration.ofSeconds(60));
      assertEquals("1.1 200", curl("--http2", base + "/-/health/live").ok().output().trim());
      SSLContext trusting = TestCertificates.context(null, ca);
      try (SSLSocket s = (SSLSocket) trusting.getSocketFactory().createSocket("127.0.0.1", URI.create(base).getPort())) {
        s.setSoTimeout(20_000);
        s.startHandshake();
        SlowHeadIT.Trickle trickle = SlowHeadIT.Trickle.start(s.getOutputStream(), "GET /-/health/live HTTP/1.1\r\nHost: x\r\n");
        assertTrue(trickle.begun.await(10, java.util.concurrent.TimeUnit.SECONDS));
        int read;
        try {
          read = s.getInputStream().read();
        } catch (java.net.SocketTimeoutException e) {
          throw new AssertionError("the node kept the trickling TLS connection open for 20 s");
        } catch (java.io.IOException e) {
          read = -1; // reset: closed all the same
        }
        trickle.stop();
        assertEquals(-1, read, "closed without an answer");
      }
      String metrics = ClientCommand.run(work, Map.of(), Duration.ofSeconds(30),
          List.of("curl", "-sS", "--cacert", ca.caCert().toString(), base + "/-/metrics")).ok().output();
      assertTrue(metrics.contains("corral_http_head_timeouts_total{phase=\"first-request\"} 1.0"), metrics);
    }
  }

  /** Reads until the node closes the connection; fails if it is still open after 20 s. */
  private static void assertClosedByTheNode(java.net.Socket s) throws Exception {
    s.setSoTimeout(20_000);
    try {
      while (s.getInputStream().read() >= 0) {
        // nothing is expected; read until the end
      }
    } catch (java.net.SocketTimeoutException e) {
      throw new AssertionError("the node kept the connection open for 20 s");
    } catch (java.io.IOException e) {
      // reset by the node: closed all the same
    }
  }

  private SSLSocket tlsClient(String base, String... alpn) throws Exception {
    SSLSocket s = (SSLSocket) TestCertificates.context(null, ca).getSocketFactory()
        .createSocket("127.0.0.1", URI.create(base).getPort());
    javax.net.ssl.SSLParameters p = s.getSSLParameters();
    p.setApplicationProtocols(alpn);
    s.setSSLParameters(p);
    s.setSoTimeout(20_000);
    s.startHandshake();
    return s;
  }

  /**
   * The HTTP/2 port keeps the front door's connection defences: a connection that never
   * completes its TLS handshake, one that negotiates h2 and sends nothing, and one that
   * negotiates HTTP/1.1 and trickles its head are each closed by the header-read timeout (3 s
   * here) and counted, while curl is served over HTTP/2 meanwhile.
   */
  @Test
  @Order(5)
  void withHttp2StalledHandshakesSilentH2AndTricklingHeadsAreCut() throws Exception {
    long before = headTimeouts();
    try (java.net.Socket silent = new java.net.Socket("127.0.0.1", URI.create(corral).getPort())) {
      silent.getOutputStream().write(new byte[] {0x16, 0x03, 0x01}); // the start of a ClientHello, then nothing
      assertEquals("2 200", curl("--http2", corral + "/-/health/live").ok().output().trim());
      assertClosedByTheNode(silent);
    }
    try (SSLSocket h2 = tlsClient(corral, "h2")) {
      assertEquals("h2", h2.getApplicationProtocol());
      assertClosedByTheNode(h2);
    }
    try (SSLSocket h1 = tlsClient(corral, "http/1.1")) {
      assertEquals("http/1.1", h1.getApplicationProtocol());
      SlowHeadIT.Trickle trickle = SlowHeadIT.Trickle.start(h1.getOutputStream(), "GET /-/health/live HTTP/1.1\r\nHost: x\r\n");
      assertTrue(trickle.begun.await(10, java.util.concurrent.TimeUnit.SECONDS));
      assertClosedByTheNode(h1);
      trickle.stop();
      assertTrue(trickle.sent.get() > 0, "the head was still trickling in");
    }
    assertEquals(before + 3, headTimeouts());
  }

  /**
   * SIGTERM: the node drains and exits by itself (143, the JVM's exit on SIGTERM, not a SIGKILL
   * after the bounded wait), and an idle keep-alive TLS connection is closed.
   */
  @Test
  @Order(6)
  void aGracefulStopClosesIdleTlsConnectionsAndExits() throws Exception {
    try (SSLSocket idle = tlsClient(corral, "http/1.1")) {
      idle.getOutputStream().write("GET /-/health/live HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
      java.io.ByteArrayOutputStream head = new java.io.ByteArrayOutputStream();
      while (!head.toString(java.nio.charset.StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
        head.write(idle.getInputStream().read());
      }
      assertTrue(head.toString(java.nio.charset.StandardCharsets.ISO_8859_1).startsWith("HTTP/1.1 200"), head.toString());
      node.terminate();
      assertEquals(143, node.awaitExit(Duration.ofSeconds(60)), node.output());
      String afterStop = node.stdout().substring(node.stdout().indexOf("Running CoordinatedShutdown"));
      assertTrue(!afterStop.contains("ERROR"), afterStop);
      // The idle client reads nothing, so it never answers the node's TLS close notice: the stop
      // must not wait for it until the drain timeout (it did, 30 s, until 2026-12-07).
      assertTrue(!afterStop.contains("drain timeout reached"), afterStop);
      assertClosedByTheNode(idle);
    }
  }

  /**
   * The cap holds on the HTTP/2 port: with --max-connections 2 and two TLS connections open (one
   * h2, one http/1.1), a third is not accepted (its handshake gets no answer) until one of them
   * closes; then it is served.
   */
  @Test
  @Order(7)
  void theConnectionCapHoldsOnTheTlsPort() throws Exception {
    TestCertificates.Pair pair = ca.leaf("cap", KeyFormat.RSA_PKCS8);
    try (CorralProcess capped = CorralProcess.serve("tls-cap", List.of(), work.resolve("data-cap"),
        List.of("--tls-cert", pair.cert().toString(), "--tls-key", pair.key().toString(), "--max-connections", "2",
            "--header-read-timeout", "60s"));
        java.net.Socket third = new java.net.Socket()) {
      String base = capped.awaitListening(Duration.ofSeconds(60));
      java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
      try (SSLSocket first = tlsClient(base, "h2"); SSLSocket second = tlsClient(base, "http/1.1")) {
        // The kernel completes the TCP connect from its backlog; the node does not accept it.
        third.connect(new java.net.InetSocketAddress("127.0.0.1", URI.create(base).getPort()), 10_000);
        java.util.concurrent.Future<String> handshake = pool.submit(() -> {
          SSLSocket s = (SSLSocket) TestCertificates.context(null, ca).getSocketFactory()
              .createSocket(third, "127.0.0.1", third.getPort(), false);
          s.setSoTimeout(60_000);
          s.startHandshake();
          return s.getSession().getProtocol();
        });
        // A loopback handshake takes milliseconds; two seconds unanswered is the cap at work.
        org.junit.jupiter.api.Assertions.assertThrows(java.util.concurrent.TimeoutException.class,
            () -> handshake.get(2, java.util.concurrent.TimeUnit.SECONDS));
        first.close();
        assertTrue(handshake.get(30, java.util.concurrent.TimeUnit.SECONDS).startsWith("TLS"));
      } finally {
        pool.shutdownNow();
      }
    }
  }

  private long headTimeouts() throws Exception {
    String metrics = ClientCommand.run(work, Map.of(), Duration.ofSeconds(30),
        List.of("curl", "-sS", "--cacert", ca.caCert().toString(), corral + "/-/metrics")).ok().output();
    java.util.regex.Matcher m = java.util.regex.Pattern
        .compile("corral_http_head_timeouts_total\\{phase=\"first-request\"} ([0-9.]+)").matcher(metrics);
    return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
  }
}
