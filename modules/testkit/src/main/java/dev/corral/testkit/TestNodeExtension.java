package dev.corral.testkit;

import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.core.fetch.Timers;
import dev.corral.server.CorralServer;
import dev.corral.testkit.upstream.FakeUpstream;
import dev.corral.testkit.upstream.RawUpstream;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One whole Corral node in the test JVM for all the tests of a class, with its fake upstream on
 * 127.0.0.1: started before the first test, stopped (node, then upstreams) and its directory
 * deleted after the last. Replaces the start/stop blocks the in-process HTTP tests each had.
 *
 * <pre>{@code
 * @TestInstance(TestInstance.Lifecycle.PER_CLASS)
 * class SomeHttpTest {
 *   @RegisterExtension
 *   final TestNodeExtension node = TestNodeExtension.routed()
 *       .config(n -> "corral.repos.up { retries = 0 }");
 *
 *   @Test void aHit() {
 *     node.paths.put("/a", (exchange, nth) -> TestNode.ok(exchange, body));
 *     assertEquals("MISS", TestNode.xCache(node.get("/up/a")));
 *   }
 * }
 * }</pre>
 *
 * The node has repository {@code up} at the fake upstream's root ({@link TestNode#start}); the
 * fake upstream answers a path from {@link #paths} (tests add paths as they go), any other path
 * with the {@link #otherwise} handler, 404 by default. An instance field needs
 * {@code Lifecycle.PER_CLASS}; a static field works with either lifecycle.
 */
public final class TestNodeExtension implements BeforeAllCallback, AfterAllCallback {
  /** Computes a part of the node's configuration once its upstreams listen. */
  @FunctionalInterface
  public interface Setup<T> {
    T of(TestNodeExtension node) throws Exception;
  }

  /** Per-path behaviour of the fake upstream(s), looked up per request. */
  public final Map<String, FakeUpstream.Handler> paths = new ConcurrentHashMap<>();
  /** Per-target behaviour of the raw upstream, when there is one ({@link #withRawUpstream}). */
  public final Map<String, RawUpstream.TargetScript> rawTargets = new ConcurrentHashMap<>();

  private FakeUpstream.Handler otherwise = (exchange, n) -> FakeUpstream.send(exchange, 404, new byte[0]);
  private Setup<String> config = n -> "";
  private Setup<String[]> args = n -> new String[0];
  private Ticker ticker = Ticker.systemTicker();
  private Scheduler scheduler = Timers.system();
  private java.time.Clock clock = java.time.Clock.systemUTC();
  private boolean withRaw;
  private final Map<String, FakeUpstream> extra = new LinkedHashMap<>();

  private Path dir;
  private FakeUpstream upstream;
  private RawUpstream raw;
  private CorralServer server;
  private HttpClient client;

  private TestNodeExtension() {}

  /** A node whose fake upstream answers from {@link #paths}, 404 for any other path. */
  public static TestNodeExtension routed() {
    return new TestNodeExtension();
  }

  /** The fake upstream's answer for paths not in {@link #paths}. */
  public TestNodeExtension otherwise(FakeUpstream.Handler handler) {
    this.otherwise = Objects.requireNonNull(handler);
    return this;
  }

  /** HOCON for the node (e.g. more repositories at {@code n.url("/")}), computed once the upstreams listen. */
  public TestNodeExtension config(Setup<String> config) {
    this.config = Objects.requireNonNull(config);
    return this;
  }

  /** Further command-line flags, computed once the upstreams listen and {@link #dir()} exists. */
  public TestNodeExtension args(Setup<String[]> args) {
    this.args = Objects.requireNonNull(args);
    return this;
  }

  /** The node's source of interval time, e.g. a {@link ManualTicker} the test moves. */
  public TestNodeExtension ticker(Ticker ticker) {
    this.ticker = Objects.requireNonNull(ticker);
    return this;
  }

  /**
   * The scheduler of the node's waiter timers (budgets, re-asks, retry pauses), e.g. a {@link
   * ManualScheduler}: give it with its own ticker ({@link #ticker}), so both keep one time.
   */
  public TestNodeExtension scheduler(Scheduler scheduler) {
    this.scheduler = Objects.requireNonNull(scheduler);
    return this;
  }

  /** The node's wall clock (the ages of stored copies and their last use), e.g. a {@link ManualClock}. */
  public TestNodeExtension clock(java.time.Clock clock) {
    this.clock = Objects.requireNonNull(clock);
    return this;
  }

  /** Both at once: the node's intervals and timers in {@code scheduler}'s manual time. */
  public TestNodeExtension manualTime(ManualScheduler scheduler) {
    return ticker(scheduler.ticker()).scheduler(scheduler);
  }

  /** Also starts a {@link RawUpstream} answering each request target from {@link #rawTargets}. */
  public TestNodeExtension withRawUpstream() {
    this.withRaw = true;
    return this;
  }

  /** Also starts another fake upstream (another host) with the same answers, found by {@link #upstream(String)}. */
  public TestNodeExtension withUpstream(String name) {
    extra.put(name, null);
    return this;
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    dir = Files.createTempDirectory("corral-node-");
    FakeUpstream.Handler answer = (exchange, n) -> {
      FakeUpstream.Handler h = paths.get(exchange.getRequestURI().getPath());
      (h == null ? otherwise : h).handle(exchange, n);
    };
    upstream = new FakeUpstream(answer);
    for (String name : extra.keySet()) {
      extra.put(name, new FakeUpstream(answer));
    }
    if (withRaw) {
      raw = new RawUpstream((target, socket, out) -> {
        RawUpstream.TargetScript script = rawTargets.get(target);
        if (script == null) {
          throw new IllegalStateException("no raw answer for " + target);
        }
        script.answer(target, socket, out);
      });
    }
    server = TestNode.start(dir.resolve("node"), upstream.url("/"), ticker, scheduler, clock, config.of(this),
        args.of(this));
    client = TestNode.client();
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    try {
      if (server != null) {
        server.close();
      }
    } finally {
      server = null;
      if (upstream != null) {
        upstream.close();
      }
      for (FakeUpstream u : extra.values()) {
        if (u != null) {
          u.close();
        }
      }
      if (raw != null) {
        raw.close();
      }
      if (dir != null) {
        try {
          deleteTree(dir);
        } catch (IOException e) {
          System.err.println("could not delete " + dir + ": " + e); // not the tests' verdict
        }
      }
    }
  }

  // ---- what the tests use -----------------------------------------------------------------------

  public CorralServer server() {
    return Objects.requireNonNull(server, "the node is not running");
  }

  public HttpClient client() {
    return client;
  }

  /** The node's fake upstream (repository {@code up}). */
  public FakeUpstream upstream() {
    return upstream;
  }

  /** Another fake upstream started with {@link #withUpstream}. */
  public FakeUpstream upstream(String name) {
    return Objects.requireNonNull(extra.get(name), name);
  }

  /** The raw upstream started with {@link #withRawUpstream}. */
  public RawUpstream raw() {
    return Objects.requireNonNull(raw, "no raw upstream: withRawUpstream()");
  }

  /** A directory of the class's own (deleted after it); the node's data lives in {@code dir()/node}. */
  public Path dir() {
    return dir;
  }

  /** The fake upstream's URL for {@code path}. */
  public String url(String path) {
    return upstream.url(path);
  }

  /** The node's base URL, {@code http://127.0.0.1:PORT}. */
  public String base() {
    return "http://127.0.0.1:" + server().address().getPort();
  }

  public HttpResponse<byte[]> get(String target, String... headers) {
    return TestNode.get(client, server(), target, headers);
  }

  public CompletableFuture<HttpResponse<byte[]>> getAsync(String target) {
    return TestNode.getAsync(client, server(), target);
  }

  static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    Files.walkFileTree(root, new SimpleFileVisitor<>() {
      @Override
      public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
        Files.delete(file);
        return FileVisitResult.CONTINUE;
      }

      @Override
      public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
        Files.delete(d);
        return FileVisitResult.CONTINUE;
      }
    });
  }
}
