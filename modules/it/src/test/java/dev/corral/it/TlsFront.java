package dev.corral.it;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * An HTTPS front for a node on 127.0.0.1, as a TLS-terminating ingress is: clients that send
 * credentials over HTTPS only (the go command) reach the node through it. Its certificate is
 * for the address 127.0.0.1, signed by a CA of its own ({@link LoopbackHttps}); {@link #certificate()}
 * is the CA's PEM a client trusts ({@code SSL_CERT_FILE} for go). Each GET is forwarded with its path
 * and query as sent and its {@code Authorization}, {@code Accept} and {@code User-Agent}; the
 * answer's status, body, {@code Content-Type} and {@code WWW-Authenticate} come back.
 */
final class TlsFront implements AutoCloseable {
  private static final List<String> REQUEST_HEADERS = List.of("Authorization", "Accept", "User-Agent");
  private static final List<String> RESPONSE_HEADERS = List.of("Content-Type", "WWW-Authenticate");

  private final HttpsServer server;
  private final ExecutorService pool = Executors.newFixedThreadPool(4);
  private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(10)).build();
  private final String backend;
  private final Path certificate;

  private TlsFront(Path dir, String backend) throws Exception {
    this.backend = backend;
    server = LoopbackHttps.start(dir, "front", pool, this::forward);
    certificate = LoopbackHttps.certificate(dir, "front");
  }

  /** An HTTPS front in {@code dir} for {@code backend} ({@code http://127.0.0.1:PORT}). */
  static TlsFront start(Path dir, String backend) throws Exception {
    return new TlsFront(Files.createDirectories(dir), backend);
  }

  /** {@code https://127.0.0.1:PORT}. */
  String url() {
    return "https://127.0.0.1:" + server.getAddress().getPort();
  }

  /** The certificate (PEM) a client must trust. */
  Path certificate() {
    return certificate;
  }

  private void forward(HttpExchange exchange) throws IOException {
    try (exchange) {
      URI uri = exchange.getRequestURI();
      String target = backend + uri.getRawPath() + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
      HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(target)).timeout(Duration.ofSeconds(60))
          .method(exchange.getRequestMethod(), HttpRequest.BodyPublishers.noBody());
      for (String h : REQUEST_HEADERS) {
        String v = exchange.getRequestHeaders().getFirst(h);
        if (v != null) {
          request.header(h, v);
        }
      }
      HttpResponse<byte[]> answer;
      try {
        answer = client.send(request.build(), HttpResponse.BodyHandlers.ofByteArray());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        exchange.sendResponseHeaders(502, -1);
        return;
      }
      for (String h : RESPONSE_HEADERS) {
        answer.headers().allValues(h).forEach(v -> exchange.getResponseHeaders().add(h, v));
      }
      byte[] body = answer.body();
      boolean head = exchange.getRequestMethod().equals("HEAD");
      exchange.sendResponseHeaders(answer.statusCode(), head || body.length == 0 ? -1 : body.length);
      if (!head) {
        exchange.getResponseBody().write(body);
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
