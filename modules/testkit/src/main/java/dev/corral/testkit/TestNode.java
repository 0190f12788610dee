package dev.corral.testkit;

import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.core.fetch.Timers;
import dev.corral.server.CorralServer;
import dev.corral.server.CorralSettings;
import dev.corral.testkit.upstream.FakeUpstream;
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

/**
 * Starts a whole Corral node in-process for HTTP-level tests, and talks to it over loopback. A
 * test class that needs one node for all its tests registers a {@link TestNodeExtension} instead.
 */
public final class TestNode {
  private TestNode() {}

  /**
   * Starts a node on {@code dir/data} with repository {@code up} at {@code upstreamBase}.
   *
   * @param hocon extra configuration (e.g. {@code corral.repos.up { retries = 0 }}), or empty
   * @param extraArgs further command-line flags
   */
  public static CorralServer start(Path dir, String upstreamBase, String hocon, String... extraArgs) throws Exception {
    return start(dir, upstreamBase, Ticker.systemTicker(), hocon, extraArgs);
  }

  /** As above, the node measuring intervals (the negative TTL, ...) with {@code ticker}, e.g. a {@link ManualTicker}. */
  public static CorralServer start(Path dir, String upstreamBase, Ticker ticker, String hocon, String... extraArgs)
      throws Exception {
    return start(dir, upstreamBase, ticker, Timers.system(), hocon, extraArgs);
  }

  /**
   * As above, the node's waiter timers (budgets, re-asks, retry pauses) on {@code scheduler}, e.g.
   * a {@link ManualScheduler} of the same {@link ManualTicker}.
   */
  public static CorralServer start(Path dir, String upstreamBase, Ticker ticker, Scheduler scheduler, String hocon,
      String... extraArgs) throws Exception {
    return start(dir, upstreamBase, ticker, scheduler, java.time.Clock.systemUTC(), hocon, extraArgs);
  }

  /** As above, the node's wall clock (ages of stored copies, their last use) {@code clock}, e.g. a {@link ManualClock}. */
  public static CorralServer start(Path dir, String upstreamBase, Ticker ticker, Scheduler scheduler,
      java.time.Clock clock, String hocon, String... extraArgs) throws Exception {
    Path config = dir.resolve("corral-test.conf");
    Files.createDirectories(dir);
    Files.writeString(config, hocon);
    List<String> args = new ArrayList<>(List.of(
        "--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0", "--peer-port", "0",
        "--data-dir", dir.resolve("data").toString(),
        "--repo", "up=generic:" + upstreamBase,
        "--config", config.toString()));
    args.addAll(List.of(extraArgs));
    return CorralServer.start(CorralSettings.load(args.toArray(new String[0]), Map.of()), ticker, scheduler, clock);
  }

  public static HttpClient client() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(10))
        .build();
  }

  public static URI uri(CorralServer server, String target) {
    InetSocketAddress a = server.address();
    return URI.create("http://127.0.0.1:" + a.getPort() + target);
  }

  public static HttpRequest.Builder request(CorralServer server, String target) {
    return HttpRequest.newBuilder(uri(server, target)).timeout(Duration.ofSeconds(30));
  }

  public static HttpResponse<byte[]> get(HttpClient client, CorralServer server, String target, String... headers) {
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

  public static CompletableFuture<HttpResponse<byte[]>> getAsync(HttpClient client, CorralServer server, String target) {
    return client.sendAsync(request(server, target).GET().build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  public static String xCache(HttpResponse<?> r) {
    return r.headers().firstValue("X-Cache").orElse(null);
  }

  /** A probe, not an assertion: see {@link Await#until(String, Duration, BooleanSupplier)}. */
  public static void await(String what, Duration limit, BooleanSupplier condition) {
    Await.until(what, limit, condition);
  }

  public static byte[] bytes(int size, long seed) {
    byte[] b = new byte[size];
    new java.util.Random(seed).nextBytes(b);
    return b;
  }

  /** A 200 with the body and a Content-Type of its own, from a fake upstream's handler. */
  public static void ok(com.sun.net.httpserver.HttpExchange exchange, byte[] body) throws java.io.IOException {
    exchange.getResponseHeaders().add("Content-Type", "application/x-test");
    dev.corral.testkit.upstream.FakeUpstream.send(exchange, 200, body);
  }

  /** Waits for a latch the test's fake upstream counts down, failing after 20 s. */
  public static void await(java.util.concurrent.CountDownLatch latch) throws InterruptedException {
    Await.latch(latch);
  }
}
