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
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;

/**
 * An HTTP proxy on 127.0.0.1 in front of a registry that passes every GET and HEAD through
 * (status, {@code Content-Type}, {@code Docker-Content-Digest}, the version header, the body), in
 * one of two test roles:
 *
 * <ul>
 *   <li>hostile ({@link #flip}): turns one bit of every blob body it relays, the registry's answer
 *       with one wrong byte and the right length;
 *   <li>a token-auth registry ({@link #requireTokens}): every request for {@code /v2/NAME/...}
 *       needs {@code Authorization: Bearer T} with a token for {@code repository:NAME:pull}, else
 *       401 with the registry token challenge; its realm {@code /token} gives tokens only for the
 *       configured Basic credential, and counts what it gave per scope.
 * </ul>
 */
final class RegistryProxy implements AutoCloseable {
  private static final Pattern REPOSITORY = Pattern.compile("/v2/(.+)/(?:manifests|blobs|tags)/.*");
  private static final List<String> RELAYED = List.of("Content-Type", "Docker-Content-Digest",
      "Docker-Distribution-API-Version", "ETag");

  private final HttpServer server;
  private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
  private final String target;
  private volatile boolean flip;
  private volatile String basic; // the realm's one credential, as an Authorization value; null: no tokens
  private final Map<String, String> tokens = new ConcurrentHashMap<>(); // token -> scope
  /** The paths asked, in order. */
  final List<String> asked = new CopyOnWriteArrayList<>();
  /** The scope of each token the realm gave, in order. */
  final List<String> tokensGiven = new CopyOnWriteArrayList<>();
  /** The tokens the realm gave. */
  final List<String> tokenValues = new CopyOnWriteArrayList<>();

  RegistryProxy(String target) throws IOException {
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

  /** From now on, asks for registry tokens given to {@code user:password} only. */
  RegistryProxy requireTokens(String user, String password) {
    basic = "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
    return this;
  }

  /** The token realm: one token per request, for the scope asked, to the configured credential only. */
  private void token(HttpExchange exchange) throws IOException {
    String query = String.valueOf(exchange.getRequestURI().getQuery());
    String scope = null;
    for (String pair : query.split("&")) {
      if (pair.startsWith("scope=")) {
        scope = pair.substring("scope=".length());
      }
    }
    if (!basic.equals(exchange.getRequestHeaders().getFirst("Authorization")) || scope == null) {
      exchange.sendResponseHeaders(401, -1);
      return;
    }
    String token = "tok-" + UUID.randomUUID();
    tokens.put(token, scope);
    tokensGiven.add(scope);
    tokenValues.add(token);
    byte[] body = ("{\"token\":\"" + token + "\",\"expires_in\":300}").getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/json");
    exchange.sendResponseHeaders(200, body.length);
    exchange.getResponseBody().write(body);
  }

  /** Whether a request for {@code path} may pass; else it was answered 401 with the challenge. */
  private boolean admitted(HttpExchange exchange, String path) throws IOException {
    if (basic == null) {
      return true;
    }
    Matcher m = REPOSITORY.matcher(path);
    String scope = m.matches() ? "repository:" + m.group(1) + ":pull" : null;
    String presented = String.valueOf(exchange.getRequestHeaders().getFirst("Authorization"));
    if (scope != null && presented.startsWith("Bearer ") && scope.equals(tokens.get(presented.substring(7)))) {
      return true;
    }
    exchange.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"" + base() + "/token\",service=\"corral-test\""
        + (scope == null ? "" : ",scope=\"" + scope + "\""));
    exchange.sendResponseHeaders(401, -1);
    return false;
  }

  /** Blob requests relayed so far. */
  long blobsAsked() {
    return asked.stream().filter(p -> p.contains("/blobs/")).count();
  }

  private void relay(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getRawPath();
      if (basic != null && path.equals("/token")) {
        token(exchange);
        return;
      }
      asked.add(path);
      if (!admitted(exchange, path)) {
        return;
      }
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
