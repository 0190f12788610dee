package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestCluster;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.OutputStream;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 17, fan-out on whole nodes in one JVM (docs/scale.md, "Fan-out"): while the entity's node
 * E still downloads a body (a fake upstream holds the rest of it until the test releases it),
 * the other nodes are pointed at E up to its upload cap and then at nodes whose own copy is still
 * arriving (chained streaming); no node's peer endpoint sends more than the cap at once; every
 * body is exact and the upstream is asked once. Off: every copy comes from E.
 */
@org.junit.jupiter.api.parallel.Isolated // runs alone: see modules/it/pom.xml
class PeerFanOutTest {
  private static final int SIZE = 2 * 1024 * 1024;
  private static final int CLIENTS_PER_NODE = 2;
  /** Bodies above this stream while they download (and are copied between nodes as they grow). */
  private static final String SMALL_INLINE = "corral.repo-defaults.inline-limit = \"64KiB\"\n";

  private final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  private final CountDownLatch release = new CountDownLatch(1);
  private final HttpClient client = TestNode.client();
  private FakeUpstream upstream;
  private TestCluster cluster;

  @AfterEach
  void stop() {
    release.countDown();
    if (cluster != null) {
      cluster.close();
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  /** Sends the first 256 KiB of {@code body} at once and the rest once the test releases it. */
  private FakeUpstream.Handler slow(byte[] body) {
    return (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/x-test");
      exchange.sendResponseHeaders(200, body.length);
      OutputStream out = exchange.getResponseBody();
      out.write(body, 0, 256 * 1024);
      out.flush();
      TestNode.await(release);
      out.write(body, 256 * 1024, body.length - 256 * 1024);
      out.close();
    };
  }

  private TestCluster start(Path dir, int nodes, String... args) throws Exception {
    upstream = FakeUpstream.routed(paths);
    // Fan-out is off by default for now (docs/scale.md, "Status"); a test's own "off" comes later and wins.
    List<String> all = new ArrayList<>(List.of("--drain-timeout", "1s", "--peer-fanout", "on"));
    all.addAll(List.of(args));
    cluster = TestCluster.start(dir, nodes, upstream.url("/"), SMALL_INLINE, all.toArray(new String[0]));
    return cluster;
  }

  /** {@code CLIENTS_PER_NODE} requests on every node at once, by node. */
  private Map<CorralServer, List<CompletableFuture<HttpResponse<byte[]>>>> requestEverywhere(String target) {
    Map<CorralServer, List<CompletableFuture<HttpResponse<byte[]>>>> sent = new LinkedHashMap<>();
    for (int i = 0; i < CLIENTS_PER_NODE; i++) {
      for (CorralServer s : cluster.nodes) {
        sent.computeIfAbsent(s, x -> new ArrayList<>()).add(TestNode.getAsync(client, s, target));
      }
    }
    return sent;
  }

  /** Every other node's copy is running and read by its clients. */
  private void awaitCopies(List<CorralServer> copying) {
    copying.forEach(s -> TestNode.await("a copy streaming on " + s.nodeName(), Duration.ofSeconds(30),
        () -> s.node().downloads().references() >= 2));
  }

  private static double uploadsNow(CorralServer s) {
    return s.metrics().peerUploads.get();
  }

  private static double sentOk(CorralServer s) {
    return s.metrics().peerSentBytes.labelValues("ok").get();
  }

  private static void assertExact(byte[] body, List<CompletableFuture<HttpResponse<byte[]>>> responses)
      throws Exception {
    for (var f : responses) {
      HttpResponse<byte[]> r = f.get(60, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertArrayEquals(body, r.body());
    }
  }

  @Test
  void aSlowBodyIsCopiedFromNodesStillReceivingAndNoEndpointSendsMoreThanTheCap(@TempDir Path dir)
      throws Exception {
    // A wait bound longer than the test: every copy is pointed by a free slot, never sent to E past it.
    start(dir, 5, "--peer-wait-bound", "60s");
    byte[] body = TestNode.bytes(SIZE, 21);
    paths.put("/fan/a.bin", slow(body));
    var sent = requestEverywhere("/up/fan/a.bin");
    TestNode.await("the fetch", Duration.ofSeconds(30), () -> upstream.requests("/fan/a.bin") == 1);
    CorralServer e = cluster.entityHost(ArtifactKey.of("up", upstream.url("/fan/a.bin")).id()).orElseThrow();
    List<CorralServer> others = cluster.others(e);
    awaitCopies(others);
    // Four copies: E sends its cap (2), and nodes whose own copy is still arriving send the rest.
    TestNode.await("nodes other than E sending", Duration.ofSeconds(30),
        () -> others.stream().mapToDouble(PeerFanOutTest::uploadsNow).sum() >= 2);
    assertTrue(uploadsNow(e) <= 2, "E sends at most its cap: " + uploadsNow(e));

    release.countDown();
    for (var entry : sent.entrySet()) {
      assertExact(body, entry.getValue());
    }
    assertEquals(1, upstream.requests("/fan/a.bin"), "one upstream request");
    for (CorralServer s : cluster.nodes) {
      assertTrue(s.mostPeerUploadsAtOnce() <= 2,
          s.nodeName() + " sent " + s.mostPeerUploadsAtOnce() + " copies at once, above the cap of 2");
    }
    TestNode.await("every copy counted", Duration.ofSeconds(20),
        () -> cluster.nodes.stream().mapToDouble(PeerFanOutTest::sentOk).sum() == 4.0 * SIZE);
    assertTrue(sentOk(e) <= 2.0 * SIZE, "E sent " + sentOk(e) / SIZE + " copies");
  }

  @Test
  void withFanOutOffEveryCopyComesFromTheEntitysNode(@TempDir Path dir) throws Exception {
    start(dir, 5, "--peer-fanout", "off");
    byte[] body = TestNode.bytes(SIZE, 22);
    paths.put("/owner/a.bin", slow(body));
    var sent = requestEverywhere("/up/owner/a.bin");
    TestNode.await("the fetch", Duration.ofSeconds(30), () -> upstream.requests("/owner/a.bin") == 1);
    CorralServer e = cluster.entityHost(ArtifactKey.of("up", upstream.url("/owner/a.bin")).id()).orElseThrow();
    List<CorralServer> others = cluster.others(e);
    awaitCopies(others);
    TestNode.await("E sending every copy", Duration.ofSeconds(30), () -> uploadsNow(e) == 4);
    release.countDown();
    for (var entry : sent.entrySet()) {
      assertExact(body, entry.getValue());
    }
    assertEquals(1, upstream.requests("/owner/a.bin"));
    TestNode.await("every copy counted", Duration.ofSeconds(20), () -> sentOk(e) == 4.0 * SIZE);
    for (CorralServer s : others) {
      assertEquals(0, sentOk(s), s.nodeName() + " sent nothing");
    }
  }

  @Test
  void aSourceThatStopsMidCopyMakesItsReadersResumeElsewhereWithExactBodies(@TempDir Path dir) throws Exception {
    start(dir, 5, "--peer-wait-bound", "60s");
    byte[] body = TestNode.bytes(SIZE, 23);
    paths.put("/resume/a.bin", slow(body));
    var sent = requestEverywhere("/up/resume/a.bin");
    TestNode.await("the fetch", Duration.ofSeconds(30), () -> upstream.requests("/resume/a.bin") == 1);
    CorralServer e = cluster.entityHost(ArtifactKey.of("up", upstream.url("/resume/a.bin")).id()).orElseThrow();
    List<CorralServer> others = cluster.others(e);
    awaitCopies(others);
    TestNode.await("a node other than E sending", Duration.ofSeconds(30),
        () -> others.stream().anyMatch(s -> uploadsNow(s) >= 1));
    CorralServer source = others.stream().filter(s -> uploadsNow(s) >= 1).findFirst().orElseThrow();
    // The source goes away with its copy half there: its readers resume from another node.
    cluster.stop(source);
    release.countDown();
    for (var entry : sent.entrySet()) {
      if (entry.getKey() != source) {
        assertExact(body, entry.getValue());
      }
    }
    assertEquals(1, upstream.requests("/resume/a.bin"), "resumed from other nodes, never the upstream");
  }

  @Test
  void aPeerEndpointAboveItsCapStillServesTheNextCopy(@TempDir Path dir) throws Exception {
    // The cap is the entity's to keep: a copy the endpoint refused would count as its holder's
    // failure, the holder would be dropped and the key could be fetched from the upstream again.
    start(dir, 1, "--peer-upload-cap", "1");
    byte[] body = TestNode.bytes(32 * 1024 * 1024, 25);
    paths.put("/capped/a.bin", (exchange, n) -> TestNode.ok(exchange, body));
    CorralServer s = cluster.node(0);
    assertEquals(200, TestNode.get(client, s, "/up/capped/a.bin").statusCode());
    String blob = "http://127.0.0.1:" + s.peerAddress().getPort() + "/-/peer/blobs/"
        + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
    // Two copies that read nothing: 32 MiB do not fit the sockets' buffers, so both stay open.
    List<java.io.InputStream> open = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      HttpResponse<java.io.InputStream> r = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(blob))
          .build(), HttpResponse.BodyHandlers.ofInputStream());
      assertEquals(200, r.statusCode());
      open.add(r.body());
    }
    TestNode.await("two uploads in progress", Duration.ofSeconds(20), () -> uploadsNow(s) == 2);
    HttpResponse<byte[]> third = client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(blob)).build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertEquals(200, third.statusCode(), "a copy above the cap was refused");
    assertArrayEquals(body, third.body());
    for (java.io.InputStream in : open) {
      in.close();
    }
    TestNode.await("the uploads ended", Duration.ofSeconds(20), () -> uploadsNow(s) == 0);
  }

  @Test
  void bytesThatFailTheirDigestAtTheSourceAreCommittedByNoNodeOfTheChain(@TempDir Path dir) throws Exception {
    // An OCI blob is asked by its digest: every node checks what it receives against it.
    byte[] right = TestNode.bytes(SIZE, 24);
    byte[] wrong = right.clone();
    wrong[SIZE - 10] ^= 1; // the upstream's bytes differ near the end
    String digest = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(right));
    upstream = FakeUpstream.routed(paths);
    cluster = TestCluster.start(dir, 4, upstream.url("/"), SMALL_INLINE, "--drain-timeout", "1s", "--peer-fanout", "on",
        "--peer-wait-bound", "60s", "--repo", "images=oci:" + upstream.url("/"));
    paths.put("/v2/team/app/blobs/sha256:" + digest, slow(wrong));
    String target = "/v2/images/team/app/blobs/sha256:" + digest;
    var sent = requestEverywhere(target);
    TestNode.await("the fetch", Duration.ofSeconds(30), () -> upstream.requests() >= 1);
    CorralServer e = cluster.nodes.stream()
        .filter(s -> s.metrics().inflightFetches.labelValues("images").get() >= 1).findFirst().orElseThrow();
    List<CorralServer> others = cluster.others(e);
    awaitCopies(others);
    TestNode.await("a node other than E sending", Duration.ofSeconds(30),
        () -> others.stream().anyMatch(s -> uploadsNow(s) >= 1));
    release.countDown();
    for (var responses : sent.values()) {
      for (var f : responses) {
        try {
          HttpResponse<byte[]> r = f.get(60, TimeUnit.SECONDS);
          assertFalse(r.statusCode() == 200 && java.util.Arrays.equals(wrong, r.body()),
              "a client got the wrong bytes as a complete body");
        } catch (java.util.concurrent.ExecutionException aborted) {
          // the body was cut before its end: what B2 asks for
        }
      }
    }
    String wrongSha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(wrong));
    for (CorralServer s : cluster.nodes) {
      assertTrue(s.node().store().blobSize(wrongSha).isEmpty(), s.nodeName() + " committed bytes that fail the digest");
    }
  }
}
