package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, bounded memory: 50 clients ask at once for a 60 MiB packument (which the npm adapter
 * serves rewritten) from a node with a 256 MiB heap. Every client gets the rewritten document
 * whole (or a prompt 503 with Retry-After, counted in the metrics), health answers throughout,
 * and the node neither runs out of memory nor dies. Before the fix each request read the body
 * whole and rewrote it on its own: 50 x 60 MiB.
 */
class MetadataMemoryIT {
  private static final int CLIENTS = 50;
  private static final int MIN_SIZE = 60 * 1024 * 1024;

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  private final ExecutorService pool = Executors.newFixedThreadPool(CLIENTS + 2);
  private FakeUpstream upstream;
  private Path dataDir;

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
  void fiftyClientsGetASixtyMiBPackumentThroughA256MiBHeap() throws Exception {
    dataDir = Files.createTempDirectory("corral-metadata-");
    byte[][] packument = new byte[1][];
    upstream = new FakeUpstream(this.answer(packument));
    int versions = versionsFor(upstream.url(""));
    packument[0] = packument(upstream.url(""), versions).getBytes(StandardCharsets.UTF_8);
    CorralProcess node = processes.serve("metadata", List.of("-Xmx256m"), dataDir, List.of(),
        "npm=npm:" + upstream.url("/"));
    String base = node.awaitListening(Duration.ofSeconds(60));
    String expected = sha256(packument(base + "/npm", versions).getBytes(StandardCharsets.UTF_8));

    AtomicBoolean running = new AtomicBoolean(true);
    AtomicInteger healthy = new AtomicInteger();
    CompletableFuture<String> health = CompletableFuture.supplyAsync(() -> probeHealth(base, running, healthy), pool);

    List<CompletableFuture<Answer>> answers = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      answers.add(CompletableFuture.supplyAsync(() -> fetch(base + "/npm/big"), pool));
    }
    List<Answer> got = new ArrayList<>();
    for (CompletableFuture<Answer> f : answers) {
      got.add(f.get(300, TimeUnit.SECONDS));
    }
    running.set(false);
    String summary = "alive=" + node.isAlive() + ", health: " + health.get(60, TimeUnit.SECONDS) + ", answers: "
        + got.stream().map(a -> a.status() + (a.status() < 0 ? " " + a.sha256() : "")).toList();
    int ok = 0;
    int shed = 0;
    for (Answer a : got) {
      if (a.status() == 200) {
        assertEquals(expected, a.sha256(), "the rewritten packument, whole: " + a + "; " + summary);
        ok++;
      } else {
        assertEquals(503, a.status(), "200, or a 503 shedding load: " + a + "; " + summary);
        assertTrue(a.retryAfter(), "a 503 says when to retry: " + a);
        shed++;
      }
    }
    List<Answer> seen = got;
    assertEquals("healthy", health.get(60, TimeUnit.SECONDS), node.output());
    assertTrue(healthy.get() > 0, "health was asked while the clients were served");
    assertTrue(ok > 0, "some clients get the packument: " + seen);
    assertEquals(1, upstream.requests("/big"), "one upstream fetch");

    assertTrue(node.isAlive(), node.output());
    assertEquals(200, Http.getBytes(base + "/-/health/live").statusCode());
    String metrics = new String(Http.getBytes(base + "/-/metrics").body(), StandardCharsets.UTF_8);
    assertEquals(shed, shedCount(metrics), "every 503 is counted; " + ok + " got 200");
    String output = node.stdout() + node.stderr();
    assertFalse(output.contains("OutOfMemoryError"), "no OutOfMemoryError\n" + node.output());
  }

  /** {@code corral_metadata_shed_total} summed over repositories. */
  private static long shedCount(String metrics) {
    long n = 0;
    for (String line : metrics.split("\n")) {
      if (line.startsWith("corral_metadata_shed_total")) {
        n += (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return n;
  }

  record Answer(int status, boolean retryAfter, long bytes, String sha256) {}

  private static Answer fetch(String url) {
    try {
      HttpRequest request = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(240)).GET().build();
      HttpResponse<InputStream> r = Http.CLIENT.send(request, HttpResponse.BodyHandlers.ofInputStream());
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      long n = 0;
      try (InputStream in = r.body()) {
        byte[] buf = new byte[64 * 1024];
        int k;
        while ((k = in.read(buf)) > 0) {
          md.update(buf, 0, k);
          n += k;
        }
      }
      return new Answer(r.statusCode(), r.headers().firstValue("Retry-After").isPresent(), n,
          HexFormat.of().formatHex(md.digest()));
    } catch (IOException e) {
      return new Answer(-1, false, 0, e.toString());
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** Asks /-/health/live back to back until told to stop; "healthy" when every answer was 200. */
  private static String probeHealth(String base, AtomicBoolean running, AtomicInteger healthy) {
    for (int i = 0; i < 100_000 && running.get(); i++) {
      try {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/-/health/live"))
            .timeout(Duration.ofSeconds(10)).GET().build();
        int status = Http.CLIENT.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        if (status != 200) {
          return "health answered " + status;
        }
        healthy.incrementAndGet();
      } catch (Exception e) {
        return "health did not answer: " + e;
      }
    }
    return "healthy";
  }

  private FakeUpstream.Handler answer(byte[][] packument) {
    return (HttpExchange exchange, int nth) -> {
      if (!exchange.getRequestURI().getPath().equals("/big")) {
        FakeUpstream.send(exchange, 404, new byte[0]);
        return;
      }
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, packument[0].length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(packument[0]);
      }
    };
  }

  private static final String FILLER = "lorem ipsum dolor sit amet ".repeat(110);

  /** How many versions make the packument with tarballs under {@code root} at least 60 MiB. */
  static int versionsFor(String root) {
    int one = version(new StringBuilder(), root, 99_999).length();
    return MIN_SIZE / one + 1;
  }

  /**
   * A packument of {@code versions} versions, compact JSON of plain ASCII (so the rewrite changes
   * nothing but the tarball URLs), each version with a long description and its tarball under
   * {@code root}.
   */
  static String packument(String root, int versions) {
    StringBuilder out = new StringBuilder(MIN_SIZE + 2 * 1024 * 1024);
    out.append("{\"name\":\"big\",\"versions\":{");
    for (int v = 0; v < versions; v++) {
      if (v > 0) {
        out.append(',');
      }
      version(out, root, v);
    }
    return out.append("}}").toString();
  }

  private static StringBuilder version(StringBuilder out, String root, int v) {
    String version = "1.0." + v;
    return out.append('"').append(version).append("\":{\"name\":\"big\",\"version\":\"").append(version)
        .append("\",\"description\":\"").append(FILLER).append("\",\"dist\":{\"tarball\":\"")
        .append(root).append("/big/-/big-").append(version).append(".tgz\",\"shasum\":\"")
        .append(String.format("%040x", v)).append("\"}}");
  }

  private static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new UncheckedIOException(new IOException(e));
    }
  }
}
