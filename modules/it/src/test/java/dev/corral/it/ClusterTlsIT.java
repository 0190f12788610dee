package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.pki.pem.DERPrivateKeyLoader;
import org.apache.pekko.pki.pem.PEMDecoder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, item 1 ("anyone can join the cluster"), on real processes over loopback: a 2-node
 * cluster with {@code --cluster-tls-dir} (written by {@code corral tls init}), and two strangers
 * started with the same seed list and the same database: a stock node without TLS, and a node
 * with a CA of its own. Neither ever becomes a member, and keys asked on node 1 are fetched by
 * the members only (the strangers' stores stay empty). The peer copy channel is on its own port,
 * HTTPS with client certificates; the client port answers 404 under {@code /-/peer/}.
 *
 * <p>Before the fix the stock node became Up and fetched most of node 1's keys into its own
 * store, and {@code /-/peer/blobs/<sha256>} answered on the client port.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClusterTlsIT {
  private static final int KEYS = 20;
  private static final int LARGE = 3 * 1024 * 1024; // over the inline limit: copied over the peer port
  private static final String UP = " is Up in a cluster";
  private static final Pattern PEER_URL = Pattern.compile("peer endpoint for other nodes: (\\S+)/-/peer/");

  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private FakeUpstream upstream;
  private CorralCluster cluster;
  private CorralProcess plain;
  private CorralProcess otherCa;
  private Path temp;
  private Path tls;
  private Path foreignTls;

  @BeforeAll
  void start() throws Exception {
    temp = Files.createTempDirectory("cluster-tls-it");
    tls = temp.resolve("cluster-tls");
    foreignTls = temp.resolve("foreign-tls");
    tlsInit(tls);
    tlsInit(foreignTls);
    upstream = new FakeUpstream(this::answer);
    String repo = "up=generic:" + upstream.url("/");
    Postgres.Database db = postgres.newDatabase();
    cluster = CorralCluster.start(processes, 2, temp, db, List.of("--cluster-tls-dir", tls.toString()), repo);
    for (int i = 0; i < 2; i++) {
      cluster.awaitMembersUp(i, 2, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));

    // The strangers know the seed list and even the database; they lack the cluster's CA.
    String seeds = "127.0.0.1:" + cluster.clusterPorts.get(0) + ",127.0.0.1:" + cluster.clusterPorts.get(1);
    Path password = temp.resolve("journal-password");
    // Each stranger gives up an Artery handshake after 6 s instead of Pekko's 20 (above the 5 s
    // TCP connect timeout, as Pekko asks), so the line awaited below comes 14 s sooner. A member
    // that let a stranger in (the bug) completes the handshake in milliseconds.
    Path strangerConf = Files.writeString(temp.resolve("stranger.conf"),
        "pekko.remote.artery.advanced.handshake-timeout = 6s\n");
    List<String> common = List.of("--seed-nodes", seeds, "--journal", db.url(), "--journal-user", db.user(),
        "--journal-password-file", password.toString(), "--config", strangerConf.toString());
    plain = processes.serve("stranger-plain", List.of(), temp.resolve("data-plain"),
        concat(common, List.of("--node-name", "stranger-plain")), repo);
    otherCa = processes.serve("stranger-other-ca", List.of(), temp.resolve("data-other-ca"),
        concat(common, List.of("--node-name", "stranger-other-ca", "--cluster-tls-dir", foreignTls.toString())), repo);
    plain.awaitListening(Duration.ofSeconds(90));
    otherCa.awaitListening(Duration.ofSeconds(90));
    // Each stranger has tried the seed nodes: turned away at the transport (Artery's handshake
    // with the TLS port times out, 6 s here; the other CA's certificate is refused at once), or let
    // in (the bug: then the tests below fail).
    Await.until(Duration.ofSeconds(90), plain::output, () -> plain.stdout().contains(UP)
        || plain.stdout().contains("Handshake with [pekko://corral@127.0.0.1:"));
    Await.until(Duration.ofSeconds(90), otherCa::output, () -> otherCa.stdout().contains(UP)
        || otherCa.stdout().contains("SSLHandshakeException"));
  }

  @AfterAll
  void stop() throws Exception {
    processes.stopAll();
    if (upstream != null) {
      upstream.close();
    }
    if (temp != null) {
      GeneratedBody.deleteTree(temp);
    }
  }

  private void tlsInit(Path dir) throws IOException {
    CorralProcess init = processes.track(CorralProcess.start("tls-init", List.of(), "tls", "init", dir.toString()));
    assertEquals(0, init.awaitExit(Duration.ofSeconds(60)), init.output());
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    if (path.startsWith("/k-")) {
      FakeUpstream.send(exchange, 200, body(path));
    } else if (path.equals("/large.bin")) {
      FakeUpstream.send(exchange, 200, CrashRestartIT.bytes(77, LARGE));
    } else {
      FakeUpstream.send(exchange, 404, new byte[0]);
    }
  }

  private static byte[] body(String path) {
    return ("body of " + path + "\n").repeat(100).getBytes(StandardCharsets.UTF_8);
  }

  private static <T> List<T> concat(List<T> a, List<T> b) {
    List<T> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  @Test
  void strangersNeverJoinAndFetchNothingForTheCluster() throws Exception {
    for (int k = 0; k < KEYS; k++) {
      String path = "/k-" + k + ".bin";
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(0) + "/up" + path);
      assertEquals(200, r.statusCode(), path);
      assertArrayEquals(body(path), r.body(), path);
      assertEquals(1, upstream.requests(path), path);
    }
    for (int i = 0; i < 2; i++) {
      assertTrue(cluster.membersUp(i, 2), "node " + (i + 1) + " still sees its 2 members only: " + cluster.members(i));
    }
    for (CorralProcess stranger : List.of(plain, otherCa)) {
      assertTrue(stranger.isAlive(), stranger.output());
      assertEquals(503, Http.getBytes(stranger.baseUrl() + "/-/health/ready").statusCode(),
          "never an Up member: " + stranger.output());
      assertFalse(stranger.stdout().contains(UP), stranger.output());
    }
    assertEquals(0, storedFiles(temp.resolve("data-plain")), "the stock node fetched nothing for the cluster");
    assertEquals(0, storedFiles(temp.resolve("data-other-ca")), "the other CA's node fetched nothing either");
  }

  @Test
  void theMembersCopyOverTheirPeerPortsWithClientCertificates() throws Exception {
    HttpResponse<byte[]> first = Http.getBytes(cluster.base(0) + "/up/large.bin");
    HttpResponse<byte[]> second = Http.getBytes(cluster.base(1) + "/up/large.bin");
    assertEquals(200, first.statusCode());
    assertEquals(200, second.statusCode());
    assertArrayEquals(CrashRestartIT.bytes(77, LARGE), second.body());
    assertEquals(1, upstream.requests("/large.bin"), "one node had the bytes from the other over HTTPS");
  }

  @Test
  void thePeerEndpointIsGoneFromTheClientPortAndNeedsAClusterCertificateOnThePeerPort() throws Exception {
    String sha = "0".repeat(64);
    for (int i = 0; i < 2; i++) {
      assertEquals(404, Http.getBytes(cluster.base(i) + "/-/peer/blobs/" + sha).statusCode());
      assertEquals(404, Http.getBytes(cluster.base(i) + "/-/peer/downloads/1").statusCode());
    }
    String peer = peerUrl(cluster.nodes.get(0));
    assertTrue(peer.startsWith("https://127.0.0.1:"), peer);
    URI blob = URI.create(peer + "/-/peer/blobs/" + sha);

    HttpResponse<String> member = client(tls, tls).send(HttpRequest.newBuilder(blob).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(404, member.statusCode(), "a member's certificate is let in: " + member.body());
    assertThrows(IOException.class, () -> client(tls, null).send(HttpRequest.newBuilder(blob).build(),
        HttpResponse.BodyHandlers.ofString()), "no client certificate: no connection");
    assertThrows(IOException.class, () -> client(tls, foreignTls).send(HttpRequest.newBuilder(blob).build(),
        HttpResponse.BodyHandlers.ofString()), "a certificate from another CA: no connection");
    assertThrows(IOException.class, () -> Http.CLIENT.send(HttpRequest.newBuilder(
        URI.create(peer.replace("https://", "http://") + "/-/peer/blobs/" + sha)).build(),
        HttpResponse.BodyHandlers.ofString()), "plain HTTP on the peer port: no answer");
  }

  private static String peerUrl(CorralProcess node) {
    Matcher m = PEER_URL.matcher(node.stdout());
    assertTrue(m.find(), node.output());
    return m.group(1);
  }

  /** A client trusting {@code trust}'s CA, presenting {@code identity}'s certificate (if any). */
  private static HttpClient client(Path trust, Path identity) throws Exception {
    CertificateFactory x509 = CertificateFactory.getInstance("X.509");
    KeyStore trusted = KeyStore.getInstance("PKCS12");
    trusted.load(null, null);
    try (InputStream in = Files.newInputStream(trust.resolve("ca.crt"))) {
      trusted.setCertificateEntry("ca", x509.generateCertificate(in));
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trusted);
    KeyManagerFactory kmf = null;
    if (identity != null) {
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      PrivateKey key = DERPrivateKeyLoader.load(PEMDecoder.decode(Files.readString(identity.resolve("tls.key"))));
      Certificate cert;
      try (InputStream in = Files.newInputStream(identity.resolve("tls.crt"))) {
        cert = x509.generateCertificate(in);
      }
      keys.setKeyEntry("node", key, "changeit".toCharArray(), new Certificate[] {cert});
      kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(keys, "changeit".toCharArray());
    }
    SSLContext ssl = SSLContext.getInstance("TLSv1.3");
    ssl.init(kmf == null ? null : kmf.getKeyManagers(), tmf.getTrustManagers(), null);
    return HttpClient.newBuilder().sslContext(ssl).connectTimeout(Duration.ofSeconds(10)).build();
  }

  private static long storedFiles(Path dataDir) throws IOException {
    Path store = dataDir.resolve("store");
    if (!Files.exists(store)) {
      return 0;
    }
    try (Stream<Path> files = Files.walk(store)) {
      return files.filter(Files::isRegularFile).count();
    }
  }
}
