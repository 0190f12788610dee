package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Issue 3's "done when" for a large artifact across nodes (SEMANTICS F1, B3): a 2 GiB artifact
 * (one byte past Integer.MAX_VALUE) asked for at once on all three nodes, each a JVM with a
 * 256 MiB heap, is fetched from the upstream once; the other two nodes copy it from the entity's
 * node while it downloads, and every client gets the exact bytes (hashed while reading); no node
 * runs out of memory.
 */
@Isolated("five node processes keep both cores busy")
class LargeClusterIT {
  private static final long SIZE = 2L * 1024 * 1024 * 1024;
  /** Three stores of 2 GiB each, plus their temporary files, plus headroom. */
  private static final long MIN_FREE = 16L * 1024 * 1024 * 1024;
  private static final Duration TRANSFER = Duration.ofMinutes(10);

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  private final GeneratedBody body = new GeneratedBody(0xBEEF, SIZE);
  private final ExecutorService pool = Executors.newFixedThreadPool(4);
  private FakeUpstream upstream;
  private Path dir;

  @AfterEach
  void cleanUp() throws IOException {
    processes.stopAll();
    pool.shutdownNow();
    if (upstream != null) {
      upstream.close();
    }
    if (dir != null) {
      GeneratedBody.deleteTree(dir);
    }
  }

  @Test
  void twoGibibytesAskedOnThreeNodesWith256MiBHeapsAreFetchedOnceAndArriveWhole() throws Exception {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    long free = Files.getFileStore(tmp).getUsableSpace();
    Assumptions.assumeTrue(free >= MIN_FREE,
        "skipped: " + (free >> 20) + " MiB free in " + tmp + ", three 2 GiB stores want 16 GiB");
    dir = Files.createTempDirectory(tmp, "corral-large-cluster-");

    CompletableFuture<String> expected = CompletableFuture.supplyAsync(body::sha256, pool);
    upstream = new FakeUpstream(this::answer);
    CorralCluster cluster = CorralCluster.start(processes, 3, dir, postgres.newDatabase(), List.of("-Xmx256m", CorralProcess.FULL_JIT), false,
        List.of("--max-size", "4GiB"), "up=generic:" + upstream.url("/"));
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(90));
    }
    cluster.awaitReady(Duration.ofSeconds(60));

    long startedAt = System.nanoTime();
    List<CompletableFuture<HttpResponse<InputStream>>> sent = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      HttpRequest request = HttpRequest.newBuilder(URI.create(cluster.base(i) + "/up/big.bin"))
          .timeout(Duration.ofSeconds(120)).GET().build();
      sent.add(Http.CLIENT.sendAsync(request, HttpResponse.BodyHandlers.ofInputStream()));
    }
    List<CompletableFuture<GeneratedBody.Received>> received = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      HttpResponse<InputStream> r = sent.get(i).get(150, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), "node-" + (i + 1));
      assertEquals(String.valueOf(SIZE), r.headers().firstValue("Content-Length").orElse("(none)"), "node-" + (i + 1));
      received.add(CompletableFuture.supplyAsync(() -> GeneratedBody.read(r), pool));
    }

    List<String> via = new ArrayList<>();
    String sha256 = expected.get(TRANSFER.toSeconds(), TimeUnit.SECONDS);
    for (int i = 0; i < 3; i++) {
      GeneratedBody.Received got = received.get(i).get(TRANSFER.toSeconds(), TimeUnit.SECONDS);
      via.add("node-" + (i + 1) + ": " + Http.xCache(sent.get(i).get()));
      assertEquals(SIZE, got.bytes(), "the client of node-" + (i + 1) + " receives exactly 2 GiB");
      assertEquals(sha256, got.sha256(), "the client of node-" + (i + 1) + " receives the exact bytes");
    }
    System.out.printf("LargeClusterIT: 3 clients on 3 nodes got 2 GiB each in %.1f s; %s%n",
        (System.nanoTime() - startedAt) / 1e9, via);
    assertEquals(1, upstream.requests(), "one upstream request for three nodes; " + via);

    for (int i = 0; i < 3; i++) {
      CorralProcess node = cluster.nodes.get(i);
      assertTrue(node.isAlive(), node.output());
      assertEquals(200, Http.getBytes(cluster.base(i) + "/-/health/live").statusCode());
      assertFalse((node.stdout() + node.stderr()).contains("OutOfMemoryError"), "no OutOfMemoryError\n" + node.output());
    }
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    if (!exchange.getRequestURI().getPath().equals("/big.bin")) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.sendResponseHeaders(200, body.length());
    try (OutputStream out = exchange.getResponseBody()) {
      body.writeTo(out);
    }
  }
}
