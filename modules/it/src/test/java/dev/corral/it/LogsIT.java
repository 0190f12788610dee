package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 16, "Operations you can see": {@code --access-log FILE} (text and JSON),
 * {@code --log-format json} and {@code --version}, each on a real node process
 * (docs/operations.md, "Logs").
 */
class LogsIT {
  private static final byte[] BODY = "hello from the upstream\n".getBytes(UTF_8);
  private static final String TOKEN = "a-long-random-token-for-the-ci-client";
  /** The access log reaches its file through a buffer written at least once a second. */
  private static final Duration LOG_WAIT = Duration.ofSeconds(20);
  /** The combined-log-like line (AccessLineEncoder). */
  private static final Pattern TEXT_LINE = Pattern.compile(
      "(\\S+) - (\\S+) \\[(\\d\\d/\\w{3}/\\d{4}:\\d\\d:\\d\\d:\\d\\d \\+0000)\\] \"(\\S+) (\\S+) (HTTP/1\\.1)\" (\\d{3}) (\\S+)"
          + " \"([^\"]*)\" \"([^\"]*)\" cache=(\\S+) ms=(\\d+) repo=(\\S+)");
  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;
  private FakeUpstream upstream;

  @AfterEach
  void stopUpstream() {
    if (upstream != null) {
      upstream.close();
    }
  }

  private static void answer(HttpExchange exchange, int nth) throws IOException {
    FakeUpstream.send(exchange, exchange.getRequestURI().getPath().equals("/docs/hello.txt") ? 200 : 404,
        exchange.getRequestURI().getPath().equals("/docs/hello.txt") ? BODY : new byte[0]);
  }

  private static HttpResponse<byte[]> get(String url, String token) throws Exception {
    HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60)).GET()
        .header("User-Agent", "logs-it/1.0 (\"quoted\")");
    if (token != null) {
      r.header("Authorization", "Bearer " + token);
    }
    return Http.CLIENT.send(r.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  private static List<String> awaitLines(Path file, int n) throws Exception {
    List<String> lines = new ArrayList<>();
    Await.until(LOG_WAIT, () -> "expected " + n + " lines in " + file + ", have " + lines,
        () -> {
          lines.clear();
          if (Files.exists(file)) {
            lines.addAll(Files.readAllLines(file, UTF_8));
          }
          return lines.size() >= n;
        });
    return lines;
  }

  private CorralProcess node(String name, List<String> extra) throws Exception {
    upstream = new FakeUpstream(LogsIT::answer);
    Path tokens = Files.writeString(temp.resolve("tokens"), "ci " + ClientCommand.sha256(TOKEN.getBytes(UTF_8)) + "\n");
    List<String> args = new ArrayList<>(List.of("--tokens-file", tokens.toString()));
    args.addAll(extra);
    CorralProcess node = processes.serve(name, List.of(), temp.resolve("data"), args, "files=generic:" + upstream.url("/"));
    node.awaitListening(Duration.ofSeconds(60));
    return node;
  }

  @Test
  void accessLogFileHasOneCombinedLikeLinePerRequest() throws Exception {
    Path file = temp.resolve("access.log");
    Files.writeString(file, "a line from before the start\n");
    CorralProcess node = node("access-text", List.of("--access-log", file.toString()));
    String base = node.baseUrl();

    HttpResponse<byte[]> miss = get(base + "/files/docs/hello.txt", TOKEN);
    assertEquals("MISS", Http.xCache(miss));
    HttpResponse<byte[]> hit = get(base + "/files/docs/hello.txt", TOKEN);
    assertEquals("HIT", Http.xCache(hit));
    assertArrayEquals(BODY, hit.body());
    assertEquals(401, get(base + "/files/docs/hello.txt?sig=SECRET", null).statusCode());

    List<String> lines = awaitLines(file, 4);
    assertEquals(4, lines.size(), "one line per request, after what was there:\n" + String.join("\n", lines));
    assertEquals("a line from before the start", lines.get(0), "appended, never truncated");
    assertFalse(String.join("\n", lines).contains("SECRET"), "no query in the access log\n" + lines);
    String[][] expected = {
        {"ci", "200", String.valueOf(BODY.length), "MISS"},
        {"ci", "200", String.valueOf(BODY.length), "HIT"},
        {"-", "401", null, "-"}};
    for (int i = 0; i < expected.length; i++) {
      String line = lines.get(i + 1);
      Matcher m = TEXT_LINE.matcher(line);
      assertTrue(m.matches(), "a combined-log-like line: " + line);
      assertEquals("127.0.0.1", m.group(1), line);
      assertEquals(expected[i][0], m.group(2), "the token's NAME: " + line);
      assertEquals("GET", m.group(4), line);
      assertEquals("/files/docs/hello.txt", m.group(5), line);
      assertEquals(expected[i][1], m.group(7), line);
      if (expected[i][2] != null) {
        assertEquals(expected[i][2], m.group(8), line);
      }
      assertEquals("logs-it/1.0 (\\x22quoted\\x22)", m.group(10), line);
      assertEquals(expected[i][3], m.group(11), line);
      assertEquals("files", m.group(13), line);
    }
    assertFalse(node.stdout().contains("corral.access"), "access lines only in the file\n" + node.stdout());
  }

  @Test
  void jsonAccessLogAndJsonApplicationLog() throws Exception {
    Path file = temp.resolve("access.json");
    CorralProcess node = node("access-json", List.of("--access-log", file.toString(), "--access-log-format", "json",
        "--log-format", "json", "--node-name", "logs-1"));
    String base = node.baseUrl();
    assertEquals("MISS", Http.xCache(get(base + "/files/docs/hello.txt", TOKEN)));
    assertEquals("HIT", Http.xCache(get(base + "/files/docs/hello.txt", TOKEN)));

    String stdout = node.stdout();
    List<String> appLines = stdout.lines().toList();
    assertFalse(appLines.isEmpty(), node.output());
    boolean listening = false;
    for (String line : appLines) {
      JsonNode json = JSON.readTree(line); // each line is one JSON object
      for (String key : List.of("time", "level", "logger", "thread", "message")) {
        assertTrue(json.hasNonNull(key), key + " in " + line);
      }
      if (json.get("message").asText().startsWith("listening on http://127.0.0.1:")) {
        listening = true;
        assertEquals("INFO", json.get("level").asText(), line);
        assertEquals("logs-1", json.get("node").asText(), line);
      }
    }
    assertTrue(listening, "the listening line, as JSON\n" + stdout);

    List<String> lines = awaitLines(file, 2);
    assertEquals(2, lines.size(), String.join("\n", lines));
    String[] cache = {"MISS", "HIT"};
    for (int i = 0; i < 2; i++) {
      JsonNode json = JSON.readTree(lines.get(i));
      assertEquals("127.0.0.1", json.get("client").asText(), lines.get(i));
      assertEquals("GET", json.get("method").asText());
      assertEquals("/files/docs/hello.txt", json.get("path").asText());
      assertEquals(200, json.get("status").intValue());
      assertEquals(cache[i], json.get("cache").asText());
      assertEquals(BODY.length, json.get("bytes").intValue());
      assertTrue(json.get("duration_ms").isIntegralNumber(), lines.get(i));
      assertEquals("ci", json.get("user").asText());
      assertEquals("files", json.get("repo").asText());
      assertEquals("logs-1", json.get("node").asText());
      assertTrue(json.get("time").asText().matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z"), lines.get(i));
    }
  }

  @Test
  void versionPrintsTheProjectVersionAndJavaAndExitsZero() throws Exception {
    String jar = CorralProcess.serverJar().getFileName().toString(); // corral-server-VERSION-all.jar
    String version = jar.substring("corral-server-".length(), jar.length() - "-all.jar".length());
    for (String command : List.of("--version", "version")) {
      CorralProcess p = processes.track(CorralProcess.start("version", List.of(), command));
      assertEquals(0, p.awaitExit(Duration.ofSeconds(60)), p.output());
      List<String> lines = p.stdout().lines().toList();
      assertEquals(2, lines.size(), p.output());
      assertEquals("corral " + version, lines.get(0), "the pom's version");
      assertTrue(lines.get(1).startsWith("Java "), p.output());
    }
  }
}
