package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.http.tls.Pem;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * SEMANTICS L4 on the peer port, plain and with the cluster's TLS identity: a stopping node sends
 * the last bytes of every copy it is sending to another node (here the real curl, rate limited,
 * reading {@code /-/peer/blobs/<sha256>} as a peer does), then closes the connection. The stop
 * waited for each copy's body to have left the store and then terminated the port, which reset a
 * connection whose last bytes were still on their way (as the client ports' drain did:
 * DrainAnsweredBodyTest, TlsDrainAnsweredBodyTest); with the cluster's TLS the port went through
 * Pekko's {@code enableHttps}, whose TLS stage closes at the first of the HTTP layer's two ends.
 * A copy cut so fails its checks on the receiving node, which must then get the bytes again.
 */
class PeerDrainAnsweredBodyTest {
  /** Streamed from disk, and more than the socket buffers and curl's window hold. */
  private static final int LARGE = 16 * 1024 * 1024;
  private static final int READERS = 4;
  private final byte[] large = TestNode.bytes(LARGE, 34);
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

  @ParameterizedTest
  @ValueSource(strings = {"plain", "tls"})
  void theLastBytesOfCopiesStillOnTheirWayWhenTheNodeStopsReachTheirPeers(String port, @TempDir Path dir)
      throws Exception {
    boolean tls = port.equals("tls");
    Path identity = dir.resolve("cluster-tls");
    // A peer's side of the cluster's TLS: the node's certificate presented, the cluster's CA trusted.
    List<String> curlTls = tls ? List.of("--cacert", identity.resolve("ca.crt").toString(),
        "--cert", identity.resolve("tls.crt").toString(), "--key", identity.resolve("tls.key").toString()) : List.of();
    String scheme = tls ? "https" : "http";
    start(dir, large, "60s", tls, identity);
    assertEquals(200, TestNode.get(TestNode.client(), server, "/up/d/large.bin").statusCode());
    String url = scheme + "://127.0.0.1:" + server.peerAddress().getPort() + "/-/peer/blobs/" + ClusterDataTest.sha256(large);
    // The store's commit may follow the client's response.
    Path warm = dir.resolve("warm.bin");
    TestNode.await("the blob on the peer port", Duration.ofSeconds(30),
        () -> run(command(curlTls, warm, url)) == 0 && SlowReaders.size(warm) == LARGE);
    TestNode.await("the warm-up's copy sent", Duration.ofSeconds(30), () -> server.metrics().peerUploads.get() == 0);

    List<String> names = new ArrayList<>();
    for (int i = 0; i < READERS; i++) {
      names.add("reader " + i + " on the " + port + " peer port");
    }
    CorralServer stopping = server;
    server = null;
    SlowReaders.readWholeAcrossTheStop(stopping, dir, large, names, (i, out) -> command(curlTls, out, url), () -> true);
  }

  /**
   * The other side of the graceful end: a kept-alive peer connection with no copy on its way
   * (a peer's pool keeps them) is closed by the stop at once, not held until the drain timeout.
   * Over TLS the node's close notice must come, for the peer's client answers it and closes
   * (the test reads to the end, then closes, as that client does): with the session closed only
   * on the HTTP layer's second end, an idle connection never got one.
   */
  @ParameterizedTest
  @ValueSource(strings = {"plain", "tls"})
  void anIdlePeerConnectionIsClosedByTheStopWithoutWaitingForTheDrainTimeout(String port, @TempDir Path dir)
      throws Exception {
    byte[] small = TestNode.bytes(4096, 35);
    Path identity = dir.resolve("cluster-tls");
    boolean tls = port.equals("tls");
    start(dir, small, "120s", tls, identity);
    assertEquals(200, TestNode.get(TestNode.client(), server, "/up/d/small.bin").statusCode());
    String blob = "/-/peer/blobs/" + ClusterDataTest.sha256(small);
    java.net.InetSocketAddress peer = server.peerAddress();
    java.net.Socket idle = tls ? peerTls(identity, peer) : new java.net.Socket(peer.getAddress(), peer.getPort());
    try {
      idle.setSoTimeout(90_000);
      java.io.InputStream in = idle.getInputStream();
      byte[] body = null;
      for (int i = 0; i < 100 && body == null; i++) { // the store's commit may follow the client's response
        idle.getOutputStream().write(("GET " + blob + " HTTP/1.1\r\nHost: peer\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        String head = RawHttp.readHead(in);
        int length = Integer.parseInt(head.replaceAll("(?s).*\r\n[Cc]ontent-[Ll]ength: *([0-9]+).*", "$1"));
        byte[] read = in.readNBytes(length);
        if (head.startsWith("HTTP/1.1 200")) {
          body = read;
        } else {
          Thread.sleep(100);
        }
      }
      assertArrayEquals(small, body, "the blob, on a connection kept alive");
      long start = System.nanoTime();
      CorralServer stopping = server;
      server = null;
      CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
        try {
          stopping.close();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      assertEquals(-1, in.read(), "closed by the node");
      idle.close(); // as the peer's client does once the node has closed
      stopped.get(90, TimeUnit.SECONDS);
      long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      assertTrue(seconds < 60, "the stop waited " + seconds + " s for an idle " + port + " peer connection");
    } finally {
      idle.close();
    }
  }

  /**
   * Connections that never take part do not hold a stopping node either: a stranger that opens
   * the peer port and sends nothing (plain; over TLS, not even its hello), and a member that was
   * answered over TLS and then reads nothing more, so never answers the node's close notice. The
   * stop ends each of them (from below, as the client port's TLS does for its clients) instead of
   * waiting out the drain timeout.
   */
  @ParameterizedTest
  @ValueSource(strings = {"plain silent", "tls silent", "tls member not reading"})
  void aConnectionThatNeverAnswersDoesNotHoldTheStop(String kind, @TempDir Path dir) throws Exception {
    byte[] small = TestNode.bytes(4096, 36);
    Path identity = dir.resolve("cluster-tls");
    boolean tls = kind.startsWith("tls");
    start(dir, small, "120s", tls, identity);
    assertEquals(200, TestNode.get(TestNode.client(), server, "/up/d/small.bin").statusCode());
    java.net.InetSocketAddress peer = server.peerAddress();
    java.net.Socket held;
    if (kind.endsWith("not reading")) {
      held = peerTls(identity, peer);
      // One answered request (whatever its status: the store's commit may follow the client's
      // response), then nothing read: its unread close notice and end stay in the socket.
      held.getOutputStream().write(("GET /-/peer/blobs/" + ClusterDataTest.sha256(small)
          + " HTTP/1.1\r\nHost: peer\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      RawHttp.readHead(held.getInputStream());
    } else {
      held = new java.net.Socket(peer.getAddress(), peer.getPort());
    }
    try {
      TestNode.await("the connection counted open", Duration.ofSeconds(30), () -> server.peerConnections() >= 1);
      long start = System.nanoTime();
      CorralServer stopping = server;
      server = null;
      stopping.close();
      long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
      assertTrue(seconds < 60, "the stop waited " + seconds + " s for a " + kind + " peer connection");
    } finally {
      held.close();
    }
  }

  /**
   * Starts the node with {@code body} behind every upstream path and the drain timeout given;
   * with {@code tls}, the cluster's TLS identity is written to {@code identity} first.
   */
  private void start(Path dir, byte[] body, String drainTimeout, boolean tls, Path identity) throws Exception {
    upstream = new FakeUpstream((exchange, n) -> TestNode.ok(exchange, body));
    List<String> args = new ArrayList<>(List.of("--drain-timeout", drainTimeout));
    if (tls) {
      ClusterCertificates.write(identity, List.of(), false);
      args.addAll(List.of("--cluster-tls-dir", identity.toString()));
    }
    server = TestNode.start(dir, upstream.url("/"), "", args.toArray(new String[0]));
  }

  /** A peer's side of the cluster's TLS: the node's certificate presented, the cluster's CA trusted. */
  private static java.net.Socket peerTls(Path identity, java.net.InetSocketAddress peer) throws Exception {
    java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
    keys.load(null, null);
    keys.setKeyEntry("node", Pem.privateKey(identity.resolve("tls.key")), new char[0],
        Pem.certificates(identity.resolve("tls.crt")).toArray(new java.security.cert.Certificate[0]));
    java.security.KeyStore trust = java.security.KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("ca", Pem.certificates(identity.resolve("ca.crt")).get(0));
    javax.net.ssl.KeyManagerFactory km = javax.net.ssl.KeyManagerFactory.getInstance(javax.net.ssl.KeyManagerFactory.getDefaultAlgorithm());
    km.init(keys, new char[0]);
    javax.net.ssl.TrustManagerFactory tm = javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
    tm.init(trust);
    javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
    context.init(km.getKeyManagers(), tm.getTrustManagers(), null);
    javax.net.ssl.SSLSocket s = (javax.net.ssl.SSLSocket) context.getSocketFactory().createSocket(peer.getAddress(), peer.getPort());
    s.startHandshake();
    return s;
  }

  private static int exchange(CorralServer node, String target) {
    try {
      return RawHttp.exchange(node.peerAddress(), "GET", target).status();
    } catch (IOException e) {
      return -1;
    }
  }

  private static List<String> command(List<String> tls, Path out, String url) {
    List<String> command = new ArrayList<>(List.of("curl", "-sS", "-o", out.toString()));
    command.addAll(tls);
    command.add(url);
    return command;
  }

  private static int run(List<String> command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .start();
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return -1;
      }
      return p.exitValue();
    } catch (IOException e) {
      return -1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return -1;
    }
  }
}
