package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Documents what the Pekko HTTP 1.3.0 server does with hostile request targets before Corral's
 * code sees them, measured with raw bytes on a socket (no client-side normalisation).
 *
 * <p>What the front door relies on, each asserted below:
 *
 * <ul>
 *   <li>With {@code pekko.http.server.raw-request-uri-header = on} the {@code Raw-Request-URI}
 *       header holds the request target byte for byte (path and query), whereas the parsed
 *       {@code Uri.path()} has dot segments removed, {@code %2e%2e} included: {@code /r/%2e%2e/b}
 *       becomes {@code /b}. So routing must use the raw header with {@link RequestPath}, never
 *       the parsed path.
 *   <li>Pekko itself answers 400 (strict {@code uri-parsing-mode}, the default) for raw control
 *       characters, DEL, raw backslash, raw non-ASCII, {@code | { }} and malformed
 *       percent-encoding in path or query; our handler never sees those.
 *   <li>It passes {@code %00}, {@code %2f}, {@code %5c}, {@code //}, dot segments raw and
 *       encoded, and invalid UTF-8 such as {@code %c0%ae} (the parsed path shows U+FFFD).
 *   <li>{@code pekko.http.server.parsing.max-uri-length} defaults to 2k: a request target (path
 *       plus {@code ?} plus query) of 2048 characters passes, 2049 gets {@code 414 URI Too Long}
 *       from Pekko. Raised to 8k, a 5000-character path reaches the handler intact, so
 *       {@link RequestPath} can answer its own 400.
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PekkoParsingTest {

  private ActorSystem system;
  private int defaultPort; // Pekko's defaults plus the raw-request-uri header
  private int raisedPort; // the same with max-uri-length = 8k

  @BeforeAll
  void start() throws Exception {
    Config config =
        ConfigFactory.parseString(
                "pekko.http.server.raw-request-uri-header = on\n"
                    + "pekko.loglevel = ERROR\n"
                    + "pekko.stdout-loglevel = ERROR\n")
            .withFallback(ConfigFactory.load());
    system = ActorSystem.create("pekko-parsing", config);
    defaultPort = bind(ServerSettings.create(system.settings().config()));
    raisedPort =
        bind(
            ServerSettings.create(
                ConfigFactory.parseString("pekko.http.server.parsing.max-uri-length = 8k")
                    .withFallback(system.settings().config())));
  }

  private int bind(ServerSettings settings) throws Exception {
    return Http.get(system)
        .newServerAt("127.0.0.1", 0)
        .withSettings(settings)
        .bindSync(PekkoParsingTest::echo)
        .toCompletableFuture()
        .get(10, TimeUnit.SECONDS)
        .localAddress()
        .getPort();
  }

  @AfterAll
  void stop() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  /** Body: the Raw-Request-URI header, the parsed path, the raw query; one per line. */
  private static HttpResponse echo(HttpRequest request) {
    String raw = request.getHeader("Raw-Request-URI").map(h -> h.value()).orElse("<none>");
    return HttpResponse.create()
        .withEntity(
            raw + "\n" + request.getUri().path() + "\n"
                + request.getUri().rawQueryString().orElse("<none>"));
  }

  private record Reply(int status, String raw, String parsedPath, String rawQuery, String body) {}

  /** Writes the request line byte for byte and reads the whole response. */
  private Reply send(int port, String target, String host) throws IOException {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 5000);
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write(
          ("GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
      ByteArrayOutputStream response = new ByteArrayOutputStream();
      socket.getInputStream().transferTo(response);
      String text = response.toString(StandardCharsets.ISO_8859_1);
      int status = Integer.parseInt(text.substring(9, 12)); // "HTTP/1.1 200 ..."
      String body = text.substring(text.indexOf("\r\n\r\n") + 4);
      if (status != 200) {
        return new Reply(status, null, null, null, body);
      }
      String[] lines = body.split("\n", -1);
      return new Reply(status, lines[0], lines[1], lines[2], body);
    }
  }

  private Reply send(String target) throws IOException {
    return send(defaultPort, target, "127.0.0.1");
  }

  private void assertPassed(String target, String parsedPath) throws IOException {
    Reply r = send(target);
    assertEquals(200, r.status(), target + ": " + r.body());
    assertEquals(target, r.raw(), "Raw-Request-URI is the target as sent");
    assertEquals(parsedPath, r.parsedPath(), target);
  }

  private void assertRejectedByPekko(String target, String reasonFragment) throws IOException {
    Reply r = send(target);
    assertEquals(400, r.status(), target);
    assertTrue(r.body().contains(reasonFragment), target + ": " + r.body());
  }

  @Test
  void dotSegmentsPassButTheParsedPathIsNormalised() throws IOException {
    assertPassed("/r/a/../b", "/r/b");
    assertPassed("/r/a/./b", "/r/a/b");
    assertPassed("/r/a/.%2e/b", "/r/b");
    assertPassed("/r/a;x/../b", "/r/b");
    // Decoded and resolved: the repository segment itself disappears from the parsed path.
    assertPassed("/r/%2e%2e/b", "/b");
    // RequestPath rejects every one of them from the raw header.
    for (String target : new String[] {"/r/a/../b", "/r/%2e%2e/b", "/r/a/.%2e/b"}) {
      assertInstanceOf(RequestPath.Rejected.class, RequestPath.parse(send(target).raw(), true));
    }
  }

  @Test
  void encodedSlashBackslashAndNulPassThrough() throws IOException {
    assertPassed("/r/a%2fb", "/r/a%2Fb");
    assertPassed("/r/%2e%2e%2fx", "/r/..%2Fx");
    assertPassed("/r/a%5cb", "/r/a%5Cb");
    assertPassed("/r/a%00b", "/r/a%00b");
    assertPassed("/r//a", "/r//a");
    assertPassed("/r/%ef%bc%8e%ef%bc%8e", "/r/%EF%BC%8E%EF%BC%8E");
  }

  @Test
  void invalidUtf8PassesWithReplacementCharactersInTheParsedPath() throws IOException {
    assertPassed("/r/%c0%ae", "/r/%EF%BF%BD%EF%BF%BD");
    assertEquals(
        new RequestPath.Rejected("invalid UTF-8 in path after percent-decoding"),
        RequestPath.parse(send("/r/%c0%ae").raw(), true));
  }

  @Test
  void rawQueryIsInTheRawHeader() throws IOException {
    Reply r = send("/r/a%2fb?x=%2e%2e&y=a+b");
    assertEquals(200, r.status());
    assertEquals("/r/a%2fb?x=%2e%2e&y=a+b", r.raw());
    assertEquals("x=%2e%2e&y=a+b", r.rawQuery());
  }

  @Test
  void pekkoRejectsRawControlAndIllegalCharacters() throws IOException {
    assertRejectedByPekko("/r/a\u0001b", "Illegal request-target");
    assertRejectedByPekko("/r/a\u007fb", "Illegal request-target");
    assertRejectedByPekko("/r/a\\b", "Illegal request-target");
    assertRejectedByPekko("/r/caf\u00c3\u00a9", "Illegal request-target"); // raw UTF-8 bytes
    assertRejectedByPekko("/r/a|b", "Illegal request-target");
    assertRejectedByPekko("/r/a{b}", "Illegal request-target");
  }

  @Test
  void pekkoRejectsMalformedPercentEncoding() throws IOException {
    assertRejectedByPekko("/r/%zz", "expected HEXDIG");
    assertRejectedByPekko("/r/%4", "expected HEXDIG");
    assertRejectedByPekko("/r/a?x=%zz", "expected HEXDIG"); // in the query too
  }

  @Test
  void asteriskAndAbsoluteFormTargets() throws IOException {
    // "*" (OPTIONS-style) reaches the handler with an empty parsed path.
    Reply star = send("*");
    assertEquals(200, star.status());
    assertEquals("*", star.raw());
    assertInstanceOf(RequestPath.Rejected.class, RequestPath.parse(star.raw(), true));
    // Absolute form: accepted when the Host header matches; the raw header keeps the
    // scheme and authority, so the front door must strip them (RequestPath rejects them).
    String authority = "127.0.0.1:" + defaultPort;
    Reply absolute = send(defaultPort, "http://" + authority + "/r/a/%2e%2e/b", authority);
    assertEquals(200, absolute.status(), absolute.body());
    assertEquals("http://" + authority + "/r/a/%2e%2e/b", absolute.raw());
    assertEquals("/r/b", absolute.parsedPath());
    Reply mismatch = send(defaultPort, "http://upstream.example/r/a", authority);
    assertEquals(400, mismatch.status());
    assertTrue(mismatch.body().contains("doesn't match request target authority"));
  }

  @Test
  void defaultUriLimitIs2048CharactersIncludingTheQuery() throws IOException {
    assertEquals(
        2048,
        ServerSettings.create(system.settings().config()).getParserSettings().getMaxUriLength());
    String at = "/r/" + "a".repeat(2045);
    assertEquals(200, send(at).status());
    assertEquals(at, send(at).raw());
    Reply over = send(at + "a");
    assertEquals(414, over.status());
    assertTrue(over.body().contains("URI length exceeds the configured limit of 2048"));
    assertEquals(200, send("/r/a?" + "q".repeat(2043)).status());
    assertEquals(414, send("/r/a?" + "q".repeat(2044)).status());
    assertEquals(414, send("/r/" + "a".repeat(4997)).status());
  }

  @Test
  void raisedUriLimitLetsRequestPathAnswerLongPaths() throws IOException {
    String target = "/r/" + "a".repeat(4997); // 5000 characters
    Reply r = send(raisedPort, target, "127.0.0.1");
    assertEquals(200, r.status(), r.body());
    assertEquals(target, r.raw());
    assertEquals(
        new RequestPath.Rejected("path longer than 4096 bytes"), RequestPath.parse(r.raw(), false));
    String atLimit = "/r/" + "a".repeat(4093);
    Reply ok = send(raisedPort, atLimit, "127.0.0.1");
    assertInstanceOf(RequestPath.Ok.class, RequestPath.parse(ok.raw(), false));
  }
}
