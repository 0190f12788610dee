package dev.corral.testkit.upstream;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/** An upstream on 127.0.0.1 that counts every request it receives and records its headers. */
public final class FakeUpstream implements AutoCloseable {
  public interface Handler {
    void handle(HttpExchange exchange, int nthRequestForPath) throws Exception;
  }

  /** One request as the upstream saw it. */
  public record Seen(String path, Map<String, List<String>> headers) {
    public String header(String name) {
      return headers.entrySet().stream()
          .filter(e -> e.getKey().equalsIgnoreCase(name))
          .map(e -> e.getValue().get(0))
          .findFirst()
          .orElse(null);
    }
  }

  private final HttpServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  private final Map<String, AtomicInteger> countByPath = new ConcurrentHashMap<>();
  public final List<Seen> seen = new CopyOnWriteArrayList<>();
  /** Each request's target as received (raw path, then {@code ?query} if any), in arrival order. */
  public final List<String> targets = new CopyOnWriteArrayList<>();

  /**
   * An upstream answering each path with the handler a test put in {@code paths} (looked up per
   * request, so tests add paths as they go), and 404 for any other path.
   */
  public static FakeUpstream routed(java.util.Map<String, Handler> paths) throws IOException {
    return new FakeUpstream((exchange, n) -> {
      Handler h = paths.get(exchange.getRequestURI().getPath());
      if (h == null) {
        send(exchange, 404, new byte[0]);
      } else {
        h.handle(exchange, n);
      }
    });
  }

  public FakeUpstream(Handler handler) {
    try {
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.setExecutor(executor);
    server.createContext("/", exchange -> {
      String path = exchange.getRequestURI().getPath();
      String query = exchange.getRequestURI().getRawQuery();
      targets.add(exchange.getRequestURI().getRawPath() + (query == null ? "" : "?" + query));
      seen.add(new Seen(path, Map.copyOf(exchange.getRequestHeaders())));
      int n = countByPath.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
      try {
        handler.handle(exchange, n);
      } catch (Exception e) {
        exchange.sendResponseHeaders(599, -1);
      } finally {
        exchange.close();
      }
    });
    server.start();
  }

  public String url(String path) {
    return "http://127.0.0.1:" + server.getAddress().getPort() + path;
  }

  public int requests() {
    return seen.size();
  }

  /** Requests received so far for one (decoded) path, whatever their query. */
  public int requests(String path) {
    AtomicInteger n = countByPath.get(path);
    return n == null ? 0 : n.get();
  }

  public Seen last() {
    return seen.get(seen.size() - 1);
  }

  public static void send(HttpExchange exchange, int status, byte[] body) throws IOException {
    exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
    exchange.getResponseBody().write(body);
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
