package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
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

/**
 * SEMANTICS B3, B1 and F1 at size: a 2 GiB artifact (one byte past Integer.MAX_VALUE), asked for
 * by three clients at once through a node with a 256 MiB heap, is fetched once and reaches every
 * client whole, in bounded memory. It is an OCI layer asked by its digest (issue 15: "a 2 GiB
 * layer with -Xmx256m"), so the bytes are also hashed and checked against the digest while they
 * stream to the clients.
 */
class LargeArtifactIT {
  private static final long SIZE = 2L * 1024 * 1024 * 1024;
  private static final int CLIENTS = 3;
  private static final long MIN_FREE = 10L * 1024 * 1024 * 1024;

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  private final GeneratedBody body = new GeneratedBody(0xC0FFEE, SIZE);
  private final ExecutorService pool = Executors.newFixedThreadPool(CLIENTS + 1);
  private FakeUpstream upstream;
  private Path dataDir;
  private volatile String layer; // the upstream path of the layer

  @AfterEach
  void cleanUp() throws IOException {
    processes.stopAll();
    pool.shutdownNow();
    if (upstream != null) {
      upstream.close();
    }
    if (dataDir != null) {
      GeneratedBody.deleteTree(dataDir);
    }
  }

  @Test
  void threeClientsGetATwoGibibyteLayerFromOneFetchThroughA256MiBHeap() throws Exception {
    Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
    long free = Files.getFileStore(tmp).getUsableSpace();
    Assumptions.assumeTrue(free >= MIN_FREE,
        "skipped: " + (free >> 20) + " MiB free in " + tmp + ", the 2 GiB artifact test wants 10 GiB");
    dataDir = Files.createTempDirectory(tmp, "corral-large-");

    CompletableFuture<String> expected = CompletableFuture.supplyAsync(body::sha256, pool);
    upstream = new FakeUpstream(this::answer);
    CorralProcess node = processes.serve("large", List.of("-Xmx256m", CorralProcess.FULL_JIT), dataDir, List.of("--max-size", "4GiB"),
        "layers=oci:" + upstream.url("/"));
    String base = node.awaitListening(Duration.ofSeconds(60));
    layer = "/v2/team/big/blobs/sha256:" + expected.get(120, TimeUnit.SECONDS);

    List<CompletableFuture<HttpResponse<InputStream>>> sent = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      sent.add(Http.CLIENT.sendAsync(Http.get(base + "/v2/layers/team/big/blobs/sha256:" + expected.get()),
          HttpResponse.BodyHandlers.ofInputStream()));
    }
    List<CompletableFuture<GeneratedBody.Received>> received = new ArrayList<>();
    for (CompletableFuture<HttpResponse<InputStream>> f : sent) {
      HttpResponse<InputStream> r = f.get(60, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode());
      assertEquals(String.valueOf(SIZE), r.headers().firstValue("Content-Length").orElse("(none)"));
      received.add(CompletableFuture.supplyAsync(() -> GeneratedBody.read(r), pool));
    }

    List<String> via = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      GeneratedBody.Received got = received.get(i).get(120, TimeUnit.SECONDS);
      via.add(Http.xCache(sent.get(i).get()));
      assertEquals(SIZE, got.bytes(), "client " + i + " receives exactly 2 GiB");
      assertEquals(expected.get(120, TimeUnit.SECONDS), got.sha256(), "client " + i + " receives the exact bytes");
    }
    assertEquals(1, upstream.requests(), "one upstream fetch for three clients; X-Cache: " + via);
    assertEquals(1, via.stream().filter("MISS"::equals).count(), "one leader: " + via);

    assertTrue(node.isAlive(), node.output());
    assertEquals(200, Http.getBytes(base + "/-/health/live").statusCode());
    String output = node.stdout() + node.stderr();
    assertFalse(output.contains("OutOfMemoryError"), "no OutOfMemoryError\n" + node.output());
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    if (!exchange.getRequestURI().getPath().equals(layer)) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.sendResponseHeaders(200, body.length());
    try (OutputStream out = exchange.getResponseBody()) {
      body.writeTo(out);
    }
  }
}
