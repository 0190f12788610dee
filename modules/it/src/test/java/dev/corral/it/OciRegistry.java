package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A real OCI registry for end-to-end tests: Debian's {@code docker-registry} (the CNCF
 * Distribution registry) run as a child process on 127.0.0.1, with a config generated into a
 * temp dir (filesystem storage there, no auth unless added, delete off, upload purging and
 * storage health checks off). It binds port 0 and the port is read from its "listening on" log
 * line, so there is no race for a pre-picked port; it is ready once {@code GET /v2/} answers 200.
 *
 * <p>Every request it served is read back from its access log (stdout, Apache combined format:
 * {@code 127.0.0.1 - - [06/Dec/2026:01:01:59 +0000] "GET /v2/x/manifests/v1 HTTP/1.1" 200 580 ""
 * "containers/5.23.1 ..."}); the application log (stderr) is kept beside it. Installs
 * {@code docker-registry} with apt-get when missing; never skips.
 */
final class OciRegistry implements AutoCloseable {
  /** The User-Agent of this kit's own probes and log markers, left out of {@link #requests()}. */
  static final String KIT_AGENT = "corral-oci-kit";

  /** One served request, from the access log: {@code path} is raw (percent-encoded), {@code query} may be null. */
  record Request(String method, String path, String query, int status, long bytes, String userAgent) {
    boolean is(String method, String path) {
      return this.method.equals(method) && this.path.equals(path);
    }

    @Override
    public String toString() {
      return method + " " + path + (query == null ? "" : "?" + query) + " " + status + " " + bytes;
    }
  }

  private static final Duration START = Duration.ofSeconds(30);
  private static final Pattern LISTENING = Pattern.compile("listening on (?:127\\.0\\.0\\.1|\\[::1\\]):(\\d+)");
  /** gorilla/handlers' combined log line, as the registry writes it to stdout. */
  private static final Pattern COMBINED = Pattern.compile(
      "^(\\S+) (\\S+) (\\S+) \\[([^\\]]*)\\] \"([A-Z]+) (\\S+) (HTTP/[0-9.]+)\" (\\d{3}) (\\d+|-) "
          + "\"((?:[^\"\\\\]|\\\\.)*)\" \"((?:[^\"\\\\]|\\\\.)*)\"$");

  private final Path dir;
  private final Process process;
  private final Path accessLog;
  private final Path appLog;
  private final int port;
  private int markers;

  private OciRegistry(Path dir, Process process, Path accessLog, Path appLog, int port) {
    this.dir = dir;
    this.process = process;
    this.accessLog = accessLog;
    this.appLog = appLog;
    this.port = port;
  }

  /** Starts a registry with its storage, config and logs under {@code dir}. */
  static OciRegistry start(Path dir) throws IOException, InterruptedException {
    return start(dir, "");
  }

  /**
   * The same with {@code extraYaml} appended to the generated config: top-level sections it does
   * not already have (e.g. {@code auth:} for a token realm).
   */
  static OciRegistry start(Path dir, String extraYaml) throws IOException, InterruptedException {
    ClientCommand.require("docker-registry", "docker-registry", "the OCI end-to-end tests");
    Files.createDirectories(dir);
    Path storage = Files.createDirectories(dir.resolve("storage"));
    Path config = dir.resolve("config.yml");
    Files.writeString(config, String.join("\n",
        "version: 0.1",
        "log:",
        "  level: info",
        "  formatter: text",
        "  accesslog:",
        "    disabled: false",
        "storage:",
        "  filesystem:",
        "    rootdirectory: " + storage,
        "  delete:",
        "    enabled: false",
        "  maintenance:",
        "    uploadpurging:",
        "      enabled: false",
        "http:",
        "  addr: 127.0.0.1:0",
        "  secret: " + UUID.randomUUID(),
        "health:",
        "  storagedriver:",
        "    enabled: false",
        "") + extraYaml + "\n");
    Path accessLog = dir.resolve("access.log");
    Path appLog = dir.resolve("registry.log");
    ProcessBuilder b = new ProcessBuilder("docker-registry", "serve", config.toString())
        .directory(dir.toFile())
        .redirectOutput(accessLog.toFile())
        .redirectError(appLog.toFile());
    // Nothing from the environment may configure it (the registry reads REGISTRY_* variables).
    b.environment().keySet().removeIf(k -> k.startsWith("REGISTRY_") || k.startsWith("OTEL_"));
    Process p = b.start();
    OciRegistry registry = null;
    try {
      int port = awaitPort(p, appLog);
      registry = new OciRegistry(dir, p, accessLog, appLog, port);
      registry.awaitReady();
      return registry;
    } catch (IOException | RuntimeException | Error e) {
      kill(p);
      throw e;
    }
  }

  private static int awaitPort(Process p, Path appLog) throws IOException, InterruptedException {
    long deadline = System.nanoTime() + START.toNanos();
    for (int i = 0; i < 3000 && System.nanoTime() < deadline; i++) {
      Matcher m = LISTENING.matcher(Files.readString(appLog, UTF_8));
      if (m.find()) {
        return Integer.parseInt(m.group(1));
      }
      if (!p.isAlive()) {
        throw new IllegalStateException("docker-registry exited (" + p.exitValue() + ") before listening:\n"
            + Files.readString(appLog));
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("docker-registry did not log 'listening on' within " + START + ":\n"
        + Files.readString(appLog));
  }

  private void awaitReady() throws IOException, InterruptedException {
    long deadline = System.nanoTime() + START.toNanos();
    String last = "";
    for (int i = 0; i < 3000 && System.nanoTime() < deadline; i++) {
      try {
        HttpResponse<String> r = Http.CLIENT.send(kitGet(base() + "/v2/?corral-kit=probe"),
            HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200 || r.statusCode() == 401) {
          return;
        }
        last = r.statusCode() + " " + r.body();
      } catch (IOException e) {
        last = e.toString();
      }
      if (!process.isAlive()) {
        break;
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("docker-registry at " + base() + " not ready (" + last + "):\n" + appLog());
  }

  private static HttpRequest kitGet(String url) {
    return HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10))
        .header("User-Agent", KIT_AGENT).GET().build();
  }

  /** {@code http://127.0.0.1:PORT}. */
  String base() {
    return "http://" + hostPort();
  }

  /** {@code 127.0.0.1:PORT}: the registry part of an image reference. */
  String hostPort() {
    return "127.0.0.1:" + port;
  }

  int port() {
    return port;
  }

  Path dir() {
    return dir;
  }

  /** The requests after the first {@code before} of {@link #requests()}. */
  List<Request> requestsSince(int before) throws IOException, InterruptedException {
    List<Request> all = requests();
    return List.copyOf(all.subList(before, all.size()));
  }

  /**
   * Every request the registry served so far, in the order it finished them, without this kit's
   * own probes. Settled first: a marker request is sent and awaited in the log (bounded), so a
   * request whose client already has its answer is in the list.
   */
  List<Request> requests() throws IOException, InterruptedException {
    String marker = "corral-kit=marker-" + (++markers);
    HttpResponse<Void> r = Http.CLIENT.send(kitGet(base() + "/v2/?" + marker), HttpResponse.BodyHandlers.discarding());
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    for (int i = 0; i < 1000 && System.nanoTime() < deadline; i++) {
      List<Request> all = parse(completeLines());
      if (all.stream().anyMatch(q -> marker.equals(q.query()))) {
        return all.stream().filter(q -> !KIT_AGENT.equals(q.userAgent())).toList();
      }
      Thread.sleep(10);
    }
    throw new IllegalStateException("the log marker (answered " + r.statusCode() + ") did not reach "
        + accessLog + " within 10 s");
  }

  /** How many of {@code requests} were {@code method path}. */
  static long count(List<Request> requests, String method, String path) {
    return requests.stream().filter(r -> r.is(method, path)).count();
  }

  /** How many served requests so far were {@code method path}. */
  long count(String method, String path) throws IOException, InterruptedException {
    return count(requests(), method, path);
  }

  /** The registry's application log (stderr), for failure messages. */
  String appLog() {
    try {
      return Files.readString(appLog);
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  private List<String> completeLines() throws IOException {
    String text = new String(Files.readAllBytes(accessLog), UTF_8);
    int end = text.lastIndexOf('\n');
    return end < 0 ? List.of() : text.substring(0, end).lines().toList();
  }

  /** Parses access log lines strictly: a line in another format fails, it is never skipped. */
  static List<Request> parse(List<String> lines) {
    List<Request> out = new ArrayList<>();
    for (String line : lines) {
      if (line.isBlank()) {
        continue;
      }
      Matcher m = COMBINED.matcher(line);
      if (!m.matches()) {
        throw new IllegalStateException("not an access log line: " + line);
      }
      String target = m.group(6);
      int q = target.indexOf('?');
      out.add(new Request(m.group(5), q < 0 ? target : target.substring(0, q), q < 0 ? null : target.substring(q + 1),
          Integer.parseInt(m.group(8)), m.group(9).equals("-") ? 0 : Long.parseLong(m.group(9)),
          m.group(11).replace("\\\"", "\"").replace("\\\\", "\\")));
    }
    return out;
  }

  @Override
  public void close() {
    kill(process);
  }

  private static void kill(Process p) {
    p.descendants().forEach(ProcessHandle::destroyForcibly);
    p.destroyForcibly();
    try {
      p.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
