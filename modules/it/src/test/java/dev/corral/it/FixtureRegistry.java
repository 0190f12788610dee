package dev.corral.it;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A fake upstream registry for end-to-end tests with the real clients: serves files from a
 * directory on 127.0.0.1 (port 0), counts every request by path, and lets a test override any
 * answer (a variant by {@code Accept}, a tampered body, a failure) with a {@link Route}.
 */
final class FixtureRegistry implements AutoCloseable {

  /** One request as the fixture saw it. */
  record Request(String method, String path, String query, Map<String, List<String>> headers) {
    Optional<String> header(String name) {
      return headers.entrySet().stream()
          .filter(e -> e.getKey().equalsIgnoreCase(name))
          .flatMap(e -> e.getValue().stream())
          .findFirst();
    }
  }

  /** An answer made by a test instead of the file. */
  record Answer(int status, String contentType, byte[] body, Map<String, String> headers) {
    static Answer of(int status, String contentType, byte[] body) {
      return new Answer(status, contentType, body, Map.of());
    }
  }

  /** Decides an answer for a request, or empty to serve the file as usual. */
  interface Route extends Function<Request, Optional<Answer>> {}

  private final Path root;
  private final HttpServer server;
  private final ExecutorService pool = Executors.newFixedThreadPool(16);
  private final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
  private final List<Request> log = new CopyOnWriteArrayList<>();
  private final List<Route> routes = new CopyOnWriteArrayList<>();
  private final Map<String, String> types = new ConcurrentHashMap<>();

  /** Serves {@code root}: a request for {@code /a/b} answers the file {@code root/a/b}. */
  FixtureRegistry(Path root) throws IOException {
    this.root = root.toAbsolutePath().normalize();
    this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 256);
    server.createContext("/", this::handle);
    server.setExecutor(pool);
    server.start();
  }

  /** {@code http://127.0.0.1:PORT} (no trailing slash). */
  String url() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  Path root() {
    return root;
  }

  /** Content-Type for files whose name ends with {@code suffix} (default application/octet-stream). */
  FixtureRegistry type(String suffix, String contentType) {
    types.put(suffix, contentType);
    return this;
  }

  /** Routes are asked in the order added; the first answer wins. */
  FixtureRegistry route(Route route) {
    routes.add(route);
    return this;
  }

  /** Requests seen for a path (query excluded). */
  int count(String path) {
    AtomicInteger c = counts.get(path);
    return c == null ? 0 : c.get();
  }

  /** Every request seen, in order. */
  List<Request> requests() {
    return List.copyOf(log);
  }

  /** Paths requested more than once: what a cache in front of this fixture should never cause. */
  Map<String, Integer> repeated() {
    Map<String, Integer> out = new java.util.TreeMap<>();
    counts.forEach((p, c) -> {
      if (c.get() > 1) {
        out.put(p, c.get());
      }
    });
    return out;
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      Request request = new Request(exchange.getRequestMethod(), path, exchange.getRequestURI().getRawQuery(),
          Map.copyOf(exchange.getRequestHeaders()));
      counts.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
      log.add(request);
      try (InputStream in = exchange.getRequestBody()) {
        in.readAllBytes();
      }
      for (Route r : routes) {
        Optional<Answer> a = r.apply(request);
        if (a.isPresent()) {
          send(exchange, a.get());
          return;
        }
      }
      Path file = root.resolve(java.net.URLDecoder.decode(path.substring(1), java.nio.charset.StandardCharsets.UTF_8))
          .normalize();
      if (!file.startsWith(root) || !Files.isRegularFile(file)) {
        send(exchange, Answer.of(404, "text/plain", "not found\n".getBytes()));
        return;
      }
      String type = types.entrySet().stream().filter(e -> file.toString().endsWith(e.getKey()))
          .map(Map.Entry::getValue).findFirst().orElse("application/octet-stream");
      send(exchange, Answer.of(200, type, Files.readAllBytes(file)));
    }
  }

  private static void send(HttpExchange exchange, Answer a) throws IOException {
    exchange.getResponseHeaders().set("Content-Type", a.contentType());
    a.headers().forEach((k, v) -> exchange.getResponseHeaders().set(k, v));
    boolean head = exchange.getRequestMethod().equals("HEAD");
    exchange.sendResponseHeaders(a.status(), head ? -1 : (a.body().length == 0 ? -1 : a.body().length));
    if (!head && a.body().length > 0) {
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(a.body());
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
