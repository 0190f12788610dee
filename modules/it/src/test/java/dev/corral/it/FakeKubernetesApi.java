package dev.corral.it;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;

/**
 * A fake Kubernetes API server on 127.0.0.1 over HTTPS, as much of one as Pekko's
 * kubernetes-api discovery uses: {@code GET /api/v1/namespaces/NS/pods?labelSelector=...} with
 * {@code Authorization: Bearer TOKEN}. Like the real one it answers 401 to a wrong or missing
 * token, 404 for another namespace or path, and lists only the pods whose labels match every
 * {@code key=value} term of the selector (so a selector that matches no pod gets an empty list).
 *
 * <p>What a pod's service account would have mounted is written to files in its directory:
 * {@link #caCertificate()} (the CA that signed the server's certificate for the address 127.0.0.1,
 * {@link LoopbackHttps}; the keys stay in the test's temporary directory), {@link #tokenFile()} (a
 * random token) and {@link #namespaceFile()}. Every request is recorded ({@link #requests()}) with
 * what the server made of it.
 */
final class FakeKubernetesApi implements AutoCloseable {
  /** A pod as the API lists it: its IP, labels, and one container with named ports. */
  record Pod(String name, String ip, Map<String, String> labels, String container, Map<String, Integer> ports) {}

  /** One request: its path, its label selector (null when none), and the status it got. */
  record Request(String path, String labelSelector, boolean tokenOk, int status, int podsListed) {}

  private static final String POD_LIST = "/api/v1/namespaces/%s/pods";

  private final HttpsServer server;
  private final ExecutorService pool = Executors.newFixedThreadPool(4);
  private final Path caCertificate;
  private final Path tokenFile;
  private final Path namespaceFile;
  private final String token;
  private final String namespace;
  private final List<Pod> pods = new CopyOnWriteArrayList<>();
  private final List<Request> requests = new CopyOnWriteArrayList<>();

  private FakeKubernetesApi(Path dir, String namespace) throws Exception {
    this.namespace = namespace;
    byte[] random = new byte[24];
    new SecureRandom().nextBytes(random);
    token = HexFormat.of().formatHex(random);
    tokenFile = Files.writeString(dir.resolve("token"), token);
    namespaceFile = Files.writeString(dir.resolve("namespace"), namespace);
    server = LoopbackHttps.start(dir, "ca", pool, this::answer);
    caCertificate = LoopbackHttps.certificate(dir, "ca");
  }

  /** A fake API server whose files are in {@code dir}, serving the pods of {@code namespace}. */
  static FakeKubernetesApi start(Path dir, String namespace) throws Exception {
    return new FakeKubernetesApi(Files.createDirectories(dir), namespace);
  }

  void addPod(Pod pod) {
    pods.add(pod);
  }

  /** What {@code KUBERNETES_SERVICE_HOST} and {@code KUBERNETES_SERVICE_PORT} say in a pod. */
  Map<String, String> serviceEnvironment() {
    return Map.of("KUBERNETES_SERVICE_HOST", "127.0.0.1",
        "KUBERNETES_SERVICE_PORT", String.valueOf(server.getAddress().getPort()));
  }

  Path caCertificate() {
    return caCertificate;
  }

  Path tokenFile() {
    return tokenFile;
  }

  Path namespaceFile() {
    return namespaceFile;
  }

  String podListPath() {
    return String.format(POD_LIST, namespace);
  }

  List<Request> requests() {
    return List.copyOf(requests);
  }

  private void answer(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getPath();
      String selector = query(exchange.getRequestURI().getRawQuery()).get("labelSelector");
      boolean tokenOk = ("Bearer " + token).equals(exchange.getRequestHeaders().getFirst("Authorization"));
      int status;
      byte[] body;
      int listed = 0;
      if (!tokenOk) {
        status = 401;
        body = status("Unauthorized", 401);
      } else if (!exchange.getRequestMethod().equals("GET") || !path.equals(podListPath())) {
        status = 404;
        body = status("NotFound", 404);
      } else {
        List<Pod> matching = pods.stream().filter(p -> matches(selector, p.labels())).toList();
        listed = matching.size();
        status = 200;
        body = podList(matching).getBytes(StandardCharsets.UTF_8);
      }
      requests.add(new Request(path, selector, tokenOk, status, listed));
      exchange.getResponseHeaders().set("Content-Type", "application/json");
      exchange.sendResponseHeaders(status, body.length);
      exchange.getResponseBody().write(body);
    }
  }

  /** Kubernetes' equality-based selector: every {@code key=value} term matches a label; none: all. */
  static boolean matches(String selector, Map<String, String> labels) {
    if (selector == null || selector.isBlank()) {
      return true;
    }
    for (String term : selector.split(",")) {
      String[] kv = term.split("==?", 2);
      if (kv.length != 2 || !kv[1].trim().equals(labels.get(kv[0].trim()))) {
        return false;
      }
    }
    return true;
  }

  private static Map<String, String> query(String raw) {
    Map<String, String> q = new LinkedHashMap<>();
    if (raw != null) {
      for (String pair : raw.split("&")) {
        String[] kv = pair.split("=", 2);
        q.put(URLDecoder.decode(kv[0], StandardCharsets.UTF_8),
            kv.length == 2 ? URLDecoder.decode(kv[1], StandardCharsets.UTF_8) : "");
      }
    }
    return q;
  }

  private static byte[] status(String reason, int code) {
    return ("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"" + reason
        + "\",\"code\":" + code + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static String podList(List<Pod> pods) {
    return "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
        + pods.stream().map(FakeKubernetesApi::pod).collect(Collectors.joining(",")) + "]}";
  }

  private static String pod(Pod p) {
    String labels = p.labels().entrySet().stream().map(e -> str(e.getKey()) + ":" + str(e.getValue()))
        .collect(Collectors.joining(","));
    String ports = p.ports().entrySet().stream()
        .map(e -> "{\"name\":" + str(e.getKey()) + ",\"containerPort\":" + e.getValue() + ",\"protocol\":\"TCP\"}")
        .collect(Collectors.joining(","));
    return "{\"metadata\":{\"name\":" + str(p.name()) + ",\"labels\":{" + labels + "}},"
        + "\"spec\":{\"containers\":[{\"name\":" + str(p.container()) + ",\"ports\":[" + ports + "]}]},"
        + "\"status\":{\"phase\":\"Running\",\"podIP\":" + str(p.ip()) + ",\"containerStatuses\":[{\"name\":"
        + str(p.container()) + ",\"ready\":false,\"state\":{\"running\":{\"startedAt\":\"2026-12-04T00:00:00Z\"}}}]}}";
  }

  private static String str(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  @Override
  public void close() {
    server.stop(0);
    pool.shutdownNow();
  }
}
