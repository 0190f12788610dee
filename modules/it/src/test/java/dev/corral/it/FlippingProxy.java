package dev.corral.it;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;

/**
 * A hostile upstream for tests: an HTTP proxy on 127.0.0.1 in front of a registry that passes
 * every GET and HEAD through (status, {@code Content-Type}, {@code Docker-Content-Digest}, the
 * version header, the body), and while {@link #flip} is on turns one bit of every blob body it
 * relays: the registry's answer with one wrong byte and the right length.
 */
final class FlippingProxy implements AutoCloseable {
  private static final List<String> RELAYED = List.of("Content-Type", "Docker-Content-Digest",
      "Docker-Distribution-API-Version", "ETag");

  private final HttpServer server;
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final String target;
  private volatile boolean flip;
  /** The paths asked, in order. */
  final List<String> asked = new CopyOnWriteArrayList<>();

  FlippingProxy(String target) throws IOException {
    this.target = target;
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    server.setExecutor(Executors.newCachedThreadPool());
    server.createContext("/", this::relay);
    server.start();
  }

  /** {@code http://127.0.0.1:PORT} */
  String base() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  void flip(boolean on) {
    flip = on;
  }

  /** Blob requests relayed so far. */
  long blobsAsked() {
    return asked.stream().filter(p -> p.contains("/blobs/")).count();
  }

  private void relay(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      asked.add(path);
      String query = exchange.getRequestURI().getRawQuery();
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(target + path + (query == null ? "" : "?" + query)))
          .timeout(Duration.ofSeconds(60)).method(exchange.getRequestMethod(), HttpRequest.BodyPublishers.noBody());
      String accept = exchange.getRequestHeaders().getFirst("Accept");
      if (accept != null) {
        request.header("Accept", accept);
      }
      HttpResponse<byte[]> answer;
      try {
        answer = client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        exchange.sendResponseHeaders(502, -1);
        return;
      }
      byte[] body = answer.body();
      if (flip && path.contains("/blobs/") && body.length > 0) {
        body = body.clone();
        body[body.length / 2] ^= 0x01;
      }
      for (String name : RELAYED) {
        answer.headers().firstValue(name).ifPresent(v -> exchange.getResponseHeaders().set(name, v));
      }
      boolean head = exchange.getRequestMethod().equals("HEAD");
      exchange.sendResponseHeaders(answer.statusCode(), head || body.length == 0 ? -1 : body.length);
      if (!head && body.length > 0) {
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
