package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue "kill -9 during a fetch, then start again": nothing half-written is ever served, and what
 * was committed before is served without an upstream request (SEMANTICS L3, B2, F3).
 *
 * <p>Two fetches are cut by the kill: a small one (below the inline limit, its waiter still
 * waiting) and a large one (above it, its client already streaming). The test waits until both
 * half bodies are on disk in the store's {@code tmp/} before it kills, so "no leftovers after the
 * restart" is a real check.
 */
class CrashRestartIT {
  private static final int A_SIZE = 300 * 1024;
  private static final int SMALL_SIZE = 4 * 1024 * 1024;   // answered only once complete (inline)
  private static final int LARGE_SIZE = 12 * 1024 * 1024;  // streamed while it downloads

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private final byte[] a = bytes(1, A_SIZE);
  private final byte[] small = bytes(2, SMALL_SIZE);
  private final byte[] large = bytes(3, LARGE_SIZE);
  /** Holds the first fetches of the small and large artifacts after their first half. */
  private final CountDownLatch release = new CountDownLatch(1);
  private FakeUpstream upstream;

  @AfterEach
  void stopUpstream() {
    release.countDown();
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void aKilledNodeServesWhatItCommittedAndNothingHalfWritten() throws Exception {
    upstream = new FakeUpstream(this::answer);
    Path dataDir = temp.resolve("data");
    Path storeTmp = dataDir.resolve("store").resolve("tmp");
    String repo = "up=generic:" + upstream.url("/");

    CorralProcess first = processes.serve("crash-first", List.of(), dataDir, List.of(), repo);
    String base = first.awaitListening(Duration.ofSeconds(60));

    HttpResponse<byte[]> a1 = Http.getBytes(base + "/up/a.bin");
    assertEquals(200, a1.statusCode());
    assertEquals("MISS", Http.xCache(a1));
    assertArrayEquals(a, a1.body());

    // The large one streams: its client reads the first half, so those bytes went through the node.
    CompletableFuture<HttpResponse<InputStream>> largeClient =
        Http.CLIENT.sendAsync(Http.get(base + "/up/large.bin"), HttpResponse.BodyHandlers.ofInputStream());
    CompletableFuture<HttpResponse<byte[]>> smallClient =
        Http.CLIENT.sendAsync(Http.get(base + "/up/small.bin"), HttpResponse.BodyHandlers.ofByteArray());
    HttpResponse<InputStream> largeResponse = largeClient.get(30, TimeUnit.SECONDS);
    assertEquals(200, largeResponse.statusCode());
    assertEquals(String.valueOf(LARGE_SIZE), largeResponse.headers().firstValue("Content-Length").orElse(""));
    InputStream largeBody = largeResponse.body();
    assertArrayEquals(slice(large, 0, LARGE_SIZE / 2), largeBody.readNBytes(LARGE_SIZE / 2),
        "the first half streams while the download runs");
    Await.until(Duration.ofSeconds(30), () -> "both half bodies in " + storeTmp + ": " + sizesText(storeTmp),
        () -> blobSizes(storeTmp).equals(List.of((long) SMALL_SIZE / 2, (long) LARGE_SIZE / 2)));
    first.kill();

    // The cut transfers are not ended as if complete.
    assertThrows(IOException.class, () -> largeBody.readAllBytes(), "the streaming client sees an abort");
    ExecutionException smallFailed = assertThrows(ExecutionException.class, () -> smallClient.get(30, TimeUnit.SECONDS),
        "the waiting client gets no answer from a dead node");
    assertTrue(smallFailed.getCause() instanceof IOException, smallFailed.toString());
    int requestsBeforeRestart = upstream.requests();
    assertEquals(3, requestsBeforeRestart);

    CorralProcess second = processes.serve("crash-second", List.of(), dataDir, List.of(), repo);
    String base2 = second.awaitListening(Duration.ofSeconds(60));
    assertEquals(List.of(), blobSizes(storeTmp), "no temporary files survive the restart");

    HttpResponse<byte[]> a2 = Http.getBytes(base2 + "/up/a.bin");
    assertEquals(200, a2.statusCode());
    assertEquals("HIT", Http.xCache(a2), "committed before the kill: served from disk");
    assertArrayEquals(a, a2.body());
    assertEquals(requestsBeforeRestart, upstream.requests(), "a hit asks the upstream nothing");

    for (String name : List.of("small", "large")) {
      byte[] expected = name.equals("small") ? small : large;
      HttpResponse<byte[]> r = Http.getBytes(base2 + "/up/" + name + ".bin");
      assertEquals(200, r.statusCode(), name);
      assertEquals("MISS", Http.xCache(r), name + " was never committed: fetched again");
      assertArrayEquals(expected, r.body(), name + ": the full bytes, not the half file");
    }
    assertEquals(requestsBeforeRestart + 2, upstream.requests(), "small and large each fetched once more");
    assertEquals(2, upstream.seen.stream().filter(s -> s.path().equals("/large.bin")).count());

    HttpResponse<byte[]> again = Http.getBytes(base2 + "/up/large.bin");
    assertEquals("HIT", Http.xCache(again));
    assertArrayEquals(large, again.body());
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    byte[] body = switch (path) {
      case "/a.bin" -> a;
      case "/small.bin" -> small;
      case "/large.bin" -> large;
      default -> null;
    };
    if (body == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    if (path.equals("/a.bin") || nth > 1) {
      FakeUpstream.send(exchange, 200, body);
      return;
    }
    // First fetch of small/large: half the body, then hold until the test ends.
    exchange.sendResponseHeaders(200, body.length);
    OutputStream out = exchange.getResponseBody();
    out.write(body, 0, body.length / 2);
    out.flush();
    release.await(120, TimeUnit.SECONDS);
  }

  /** Sizes of the files in the store's tmp directory, ascending. */
  private static List<Long> blobSizes(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.map(f -> {
        try {
          return Files.size(f);
        } catch (IOException gone) {
          return -1L;
        }
      }).sorted().toList();
    }
  }

  private static String sizesText(Path dir) {
    try {
      return blobSizes(dir).toString();
    } catch (IOException e) {
      return e.toString();
    }
  }

  static byte[] bytes(long seed, int size) {
    byte[] b = new byte[size];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static byte[] slice(byte[] b, int from, int to) {
    return java.util.Arrays.copyOfRange(b, from, to);
  }
}
