package dev.corral.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

/** Starts a whole Corral node in-process for HTTP-level tests, and talks to it over loopback. */
final class TestNode {
  private TestNode() {}

  /**
   * Starts a node on {@code dir/data} with repository {@code up} at {@code upstreamBase}.
   *
   * @param hocon extra configuration (e.g. {@code corral.repos.up { retries = 0 }}), or empty
   * @param extraArgs further command-line flags
   */
  static CorralServer start(Path dir, String upstreamBase, String hocon, String... extraArgs) throws Exception {
    Path config = dir.resolve("corral-test.conf");
    Files.createDirectories(dir);
    Files.writeString(config, hocon);
    List<String> args = new ArrayList<>(List.of(
        "--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0",
        "--data-dir", dir.resolve("data").toString(),
        "--repo", "up=generic:" + upstreamBase,
        "--config", config.toString()));
    args.addAll(List.of(extraArgs));
    return CorralServer.start(CorralSettings.load(args.toArray(new String[0]), Map.of()));
  }

  static HttpClient client() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10))
        .build();
  }

  static URI uri(CorralServer server, String target) {
    InetSocketAddress a = server.address();
    return URI.create("http://127.0.0.1:" + a.getPort() + target);
  }

  static HttpRequest.Builder request(CorralServer server, String target) {
    return HttpRequest.newBuilder(uri(server, target)).timeout(Duration.ofSeconds(30));
  }

  static HttpResponse<byte[]> get(HttpClient client, CorralServer server, String target, String... headers) {
    try {
      HttpRequest.Builder b = request(server, target).GET();
      for (int i = 0; i < headers.length; i += 2) {
        b.header(headers[i], headers[i + 1]);
      }
      return client.send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static CompletableFuture<HttpResponse<byte[]>> getAsync(HttpClient client, CorralServer server, String target) {
    return client.sendAsync(request(server, target).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  static String xCache(HttpResponse<?> r) {
    return r.headers().firstValue("X-Cache").orElse(null);
  }

  /**
   * A probe, not an assertion: waits (bounded) until {@code condition} holds, polling. Used to
   * learn that the node reached a state (waiters registered, a fetch ended) before going on.
   */
  static void await(String what, Duration limit, BooleanSupplier condition) {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out after " + limit + " waiting until " + what);
      }
      try {
        Thread.sleep(2);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }
  }

  static byte[] bytes(int size, long seed) {
    byte[] b = new byte[size];
    new java.util.Random(seed).nextBytes(b);
    return b;
  }

  /** A 200 with the body and a Content-Type of its own, from a fake upstream's handler. */
  static void ok(com.sun.net.httpserver.HttpExchange exchange, byte[] body) throws java.io.IOException {
    exchange.getResponseHeaders().add("Content-Type", "application/x-test");
    dev.corral.http.upstream.FakeUpstream.send(exchange, 200, body);
  }

  /** Waits for a latch the test's fake upstream counts down, failing after 20 s. */
  static void await(java.util.concurrent.CountDownLatch latch) throws InterruptedException {
    if (!latch.await(20, java.util.concurrent.TimeUnit.SECONDS)) {
      throw new AssertionError("latch not released");
    }
  }
}
