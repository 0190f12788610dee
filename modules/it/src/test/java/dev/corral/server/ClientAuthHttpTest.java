package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * Client authentication over real loopback HTTP (issue 12, item 4), and the serving hygiene of
 * item 6: with {@code --tokens-file} every repository needs a token except {@code open} (in
 * {@code --anonymous-repos}); a refused request never reaches the upstream and says nothing about
 * the key; artifact answers carry {@code nosniff} and {@code Content-Security-Policy: sandbox};
 * one {@code corral.access} line per request and one {@code corral.audit} line per purge.
 *
 * <p>Repositories {@code up}, {@code other} and {@code open}, all on the same fake upstream,
 * which answers any path with 200 and bytes of its own (an {@code .html} path as
 * {@code text/html}), {@code /missing} with 404.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientAuthHttpTest {
  static final String CI_TOKEN = "tok-ci-0123456789";
  static final String OTHER_TOKEN = "tok-other-0123456789";
  static final String ADMIN_TOKEN = "adm-token-0123456789";

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .otherwise((exchange, n) -> {
        String path = exchange.getRequestURI().getPath();
        if (path.endsWith("/missing")) {
          FakeUpstream.send(exchange, 404, new byte[0]);
          return;
        }
        exchange.getResponseHeaders().add("Content-Type", path.endsWith(".html") ? "text/html" : "application/x-test");
        FakeUpstream.send(exchange, 200, body(path));
      })
      .config(n -> """
          corral.repos {
            other { type = generic, url = "%s" }
            open { type = generic, url = "%s" }
            images { type = oci, url = "%s" }
          }
          """.formatted(n.url("/"), n.url("/"), n.url("/")))
      .args(n -> {
        Path admin = n.dir().resolve("admin-token");
        Files.writeString(admin, ADMIN_TOKEN + "\n");
        return new String[] {"--tokens-file", tokensFile(n.dir()).toString(), "--anonymous-repos", "open",
            "--admin-token-file", admin.toString()};
      });

  private final ListAppender<ILoggingEvent> access = new ListAppender<>();
  private final ListAppender<ILoggingEvent> audit = new ListAppender<>();

  static Path tokensFile(Path dir) throws Exception {
    Path file = dir.resolve("tokens");
    if (!Files.exists(file)) {
      Files.writeString(file, "# test credentials\nci " + sha256(CI_TOKEN) + "\nonly-other " + sha256(OTHER_TOKEN)
          + " other\n");
    }
    return file;
  }

  static String sha256(String token) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
  }

  static byte[] body(String path) {
    return ("bytes of " + path).getBytes(StandardCharsets.UTF_8);
  }

  static String basic(String user, String password) {
    return "Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8));
  }

  @BeforeAll
  void capture() {
    access.start();
    audit.start();
    ((Logger) LoggerFactory.getLogger("corral.access")).addAppender(access);
    ((Logger) LoggerFactory.getLogger("corral.audit")).addAppender(audit);
  }

  @AfterAll
  void release() {
    ((Logger) LoggerFactory.getLogger("corral.access")).detachAppender(access);
    ((Logger) LoggerFactory.getLogger("corral.audit")).detachAppender(audit);
  }

  private HttpResponse<byte[]> get(String target, String authorization) {
    return authorization == null ? node.get(target) : node.get(target, "Authorization", authorization);
  }

  private static void assertRefused401(HttpResponse<byte[]> r, String what) {
    assertEquals(401, r.statusCode(), what);
    assertEquals(java.util.Set.of("Basic realm=\"corral\", charset=\"UTF-8\"", "Bearer realm=\"corral\""),
        java.util.Set.copyOf(r.headers().allValues("WWW-Authenticate")), what);
    assertEquals(2, r.headers().allValues("WWW-Authenticate").size(), what);
    assertNull(xCache(r), what + ": nothing about the key");
    assertEquals("unauthorized\n", new String(r.body(), StandardCharsets.UTF_8), what + ": no detail");
    assertHygiene(r, what);
  }

  @Test
  void theOciVersionCheckAsksForACredentialAndTakesAnyValidOne() {
    HttpResponse<byte[]> none = get("/v2/", null);
    assertRefusedUnderV2(none, "/v2/ without a credential");
    assertEquals("registry/2.0", none.headers().firstValue("Docker-Distribution-API-Version").orElse(null));
    // The version check reads no repository: a token limited to another one passes it...
    assertEquals(200, get("/v2/", basic("robot", OTHER_TOKEN)).statusCode());
    assertEquals(200, get("/v2/", "Bearer " + CI_TOKEN).statusCode());
    assertRefusedUnderV2(get("/v2/", "Bearer not-a-token"), "/v2/ with a wrong token");
    // ...but not the OCI repository it does not read.
    assertEquals(403, get("/v2/images/team/app/manifests/1", basic("robot", OTHER_TOKEN)).statusCode());
    assertRefusedUnderV2(get("/v2/images/team/app/manifests/1", null), "an OCI repository without a credential");
  }

  /**
   * As {@link #assertRefused401}, with the body in the OCI API's error form and the Basic challenge
   * only (a container client takes a Bearer challenge for the registry token flow).
   */
  private static void assertRefusedUnderV2(HttpResponse<byte[]> r, String what) {
    assertEquals(401, r.statusCode(), what);
    assertEquals(List.of("Basic realm=\"corral\", charset=\"UTF-8\""), r.headers().allValues("WWW-Authenticate"), what);
    assertNull(xCache(r), what + ": nothing about the key");
    assertEquals("{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"unauthorized\",\"detail\":null}]}",
        new String(r.body(), StandardCharsets.UTF_8), what + ": no detail");
    assertHygiene(r, what);
  }

  private static void assertHygiene(HttpResponse<byte[]> r, String what) {
    assertEquals(List.of("nosniff"), r.headers().allValues("X-Content-Type-Options"), what);
    assertEquals(List.of("sandbox"), r.headers().allValues("Content-Security-Policy"), what);
  }

  @Test
  void bearerTokenReads() {
    HttpResponse<byte[]> r = get("/up/bearer/a.tgz", "Bearer " + CI_TOKEN);
    assertEquals(200, r.statusCode());
    assertArrayEquals(body("/bearer/a.tgz"), r.body());
    assertEquals("MISS", xCache(r));
  }

  @Test
  void basicWithTheTokenAsPasswordAndAnyUserNameReads() {
    for (String user : List.of("anyone", "", "__token__", "user@example")) {
      HttpResponse<byte[]> r = get("/up/basic/a.jar", basic(user, CI_TOKEN));
      assertEquals(200, r.statusCode(), user);
      assertArrayEquals(body("/basic/a.jar"), r.body(), user);
    }
  }

  @Test
  void missingOrWrongCredentialsGet401WithBothChallengesAndNeverReachTheUpstream() {
    int before = node.upstream().requests("/refused/a.tgz");
    assertRefused401(get("/up/refused/a.tgz", null), "no credential");
    assertRefused401(get("/up/refused/a.tgz", "Bearer " + CI_TOKEN + "x"), "wrong bearer");
    assertRefused401(get("/up/refused/a.tgz", "Bearer " + sha256Quiet(CI_TOKEN)), "the hash is not the token");
    assertRefused401(get("/up/refused/a.tgz", basic("ci", "wrong")), "wrong basic password");
    assertRefused401(get("/up/refused/a.tgz", basic(CI_TOKEN, "")), "token as the user name");
    assertRefused401(get("/up/refused/a.tgz", ADMIN_TOKEN.isEmpty() ? null : "Bearer " + ADMIN_TOKEN),
        "the admin token reads no repository");
    assertRefused401(get("/no-such-repo/a.tgz", null), "unknown repository: the same 401, no 404 to map repos by");
    assertEquals(before, node.upstream().requests("/refused/a.tgz"), "a refused request fetches nothing");
    // Cached bytes are no less protected: the key is now held, the answer without a token is the same.
    assertEquals("MISS", xCache(get("/up/refused/a.tgz", "Bearer " + CI_TOKEN)));
    assertRefused401(get("/up/refused/a.tgz", null), "a cached key");
  }

  private static String sha256Quiet(String token) {
    try {
      return sha256(token);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aTokenLimitedToRepositoriesGets403Elsewhere() {
    assertEquals(200, get("/other/limited/a", "Bearer " + OTHER_TOKEN).statusCode());
    HttpResponse<byte[]> elsewhere = get("/up/limited/a", "Bearer " + OTHER_TOKEN);
    assertEquals(403, elsewhere.statusCode());
    assertNull(xCache(elsewhere));
    assertEquals("forbidden\n", new String(elsewhere.body(), StandardCharsets.UTF_8));
    assertTrue(elsewhere.headers().allValues("WWW-Authenticate").isEmpty(), "asking again cannot help");
    assertEquals(0, node.upstream().requests("/limited/a") - 1, "only the allowed request reached the upstream");
    assertEquals(200, get("/up/limited/a", "Bearer " + CI_TOKEN).statusCode(), "a token without a list reads all");
  }

  @Test
  void anonymousRepositoriesNeedNoToken() {
    HttpResponse<byte[]> r = get("/open/anon/a", null);
    assertEquals(200, r.statusCode());
    assertArrayEquals(body("/anon/a"), r.body());
    assertEquals(200, get("/open/anon/a", "Bearer wrong").statusCode(), "a wrong token does not spoil an open repo");
  }

  @Test
  void theTokensFileIsReadAgainWhenItChanges() throws Exception {
    Path file = tokensFile(node.dir());
    String original = Files.readString(file);
    String added = "added-" + System.nanoTime();
    try {
      assertRefused401(get("/up/reload/a", "Bearer " + added), "not yet in the file");
      FileTime before = Files.getLastModifiedTime(file);
      Files.writeString(file, "ci " + sha256(CI_TOKEN) + "\nnew-one " + sha256(added) + "\n");
      Files.setLastModifiedTime(file, FileTime.fromMillis(before.toMillis() + 2_000)); // whatever the fs granularity
      assertEquals(200, get("/up/reload/a", "Bearer " + added).statusCode(), "in force for the next request");
      assertRefused401(get("/other/reload/a", "Bearer " + OTHER_TOKEN), "removed from the file");

      Files.writeString(file, "ci " + sha256(CI_TOKEN) + "\nnew-one not-a-hash\n");
      assertEquals(200, get("/up/reload/a", "Bearer " + added).statusCode(), "a broken change keeps what was in force");
    } finally {
      Files.writeString(file, original);
      Files.setLastModifiedTime(file, FileTime.fromMillis(System.currentTimeMillis() + 10_000));
    }
    assertEquals(200, get("/other/reload/b", "Bearer " + OTHER_TOKEN).statusCode());
  }

  @Test
  void healthStaysOpenMetricsAndPurgeNeedTheAdminToken() throws Exception {
    assertEquals(200, get("/-/health/live", null).statusCode());
    assertEquals(200, get("/-/health/ready", null).statusCode());
    HttpResponse<byte[]> metrics = get("/-/metrics", null);
    assertEquals(401, metrics.statusCode());
    assertEquals(401, get("/-/metrics", "Bearer " + CI_TOKEN).statusCode(), "a client token is not the admin token");
    assertEquals(200, get("/-/metrics", "Bearer " + ADMIN_TOKEN).statusCode());
  }

  @Test
  void servedArtifactsCarryNosniffAndASandboxPolicy() {
    HttpResponse<byte[]> miss = get("/up/hygiene/page.html", "Bearer " + CI_TOKEN);
    assertEquals("MISS", xCache(miss));
    assertEquals("text/html", miss.headers().firstValue("Content-Type").orElse(""));
    assertHygiene(miss, "miss");
    HttpResponse<byte[]> hit = get("/up/hygiene/page.html", "Bearer " + CI_TOKEN);
    assertEquals("HIT", xCache(hit));
    assertHygiene(hit, "hit");
    HttpResponse<byte[]> notFound = get("/up/hygiene/missing", "Bearer " + CI_TOKEN);
    assertEquals(404, notFound.statusCode());
    assertHygiene(notFound, "upstream 404");
    HttpResponse<byte[]> rejected = get("/up/hygiene/%2e%2e/x", "Bearer " + CI_TOKEN);
    assertEquals(400, rejected.statusCode());
    assertHygiene(rejected, "rejected path");
  }

  @Test
  void everyRequestHasAnAccessLineWithTheCredentialsNameNeverTheToken() {
    get("/up/logged/a.tgz?sig=query-secret", "Bearer " + CI_TOKEN);
    get("/up/logged/b.tgz", null);
    get("/-/health/live", null);
    List<String> lines = LoggedEvents.of(access).stream().map(ILoggingEvent::getFormattedMessage).toList();
    String a = lines.stream().filter(l -> l.contains("/up/logged/a.tgz")).findFirst().orElseThrow(() -> new AssertionError(lines));
    assertTrue(a.matches("GET repo=up path=/up/logged/a\\.tgz status=200 cache=MISS bytes=\\d+ ms=\\d+"
        + " client=127\\.0\\.0\\.1:\\d+ who=ci"), a);
    assertFalse(a.contains("query-secret"), "the query may carry secrets: " + a);
    String b = lines.stream().filter(l -> l.contains("/up/logged/b.tgz")).findFirst().orElseThrow();
    assertTrue(b.matches("GET repo=up path=/up/logged/b\\.tgz status=401 cache=- bytes=\\d+ ms=\\d+"
        + " client=127\\.0\\.0\\.1:\\d+ who=-"), b);
    assertTrue(lines.stream().anyMatch(l -> l.startsWith("GET repo=- path=/-/health/live status=200")), lines.toString());
    for (String l : lines) {
      assertFalse(l.contains(CI_TOKEN) || l.contains(ADMIN_TOKEN), l);
    }
  }

  @Test
  void everyPurgeHasAnAuditLineSayingWhoWhatAndHowManyCopies() throws Exception {
    assertEquals("MISS", xCache(get("/up/audited/a", "Bearer " + CI_TOKEN)));
    assertEquals(401, delete("/-/cache/up/audited/a", "Bearer " + CI_TOKEN).statusCode());
    assertEquals(200, delete("/-/cache/up/audited/a", "Bearer " + ADMIN_TOKEN).statusCode());
    assertEquals(404, delete("/-/cache/up/audited/a", "Bearer " + ADMIN_TOKEN).statusCode());
    List<String> lines = LoggedEvents.of(audit).stream().map(ILoggingEvent::getFormattedMessage)
        .filter(l -> l.contains("audited")).toList();
    assertEquals(3, lines.size(), lines.toString());
    assertTrue(lines.get(0).matches("purge refused: no valid admin token, client=127\\.0\\.0\\.1:\\d+ path=/up/audited/a"),
        lines.get(0));
    // Copies cluster-wide (this node's and the other holders'), holders not reached, a running fetch.
    assertTrue(lines.get(1).matches("purge by=admin-token client=127\\.0\\.0\\.1:\\d+ key=.*audited/a.*"
        + " copies=1 unreachable=0 fetchRunning=false"), lines.get(1));
    assertTrue(lines.get(2).contains(" copies=0 "), lines.get(2));
    for (String l : LoggedEvents.of(audit).stream().map(ILoggingEvent::getFormattedMessage).toList()) {
      assertFalse(l.contains(ADMIN_TOKEN) || l.contains(CI_TOKEN), l);
    }
  }

  private HttpResponse<byte[]> delete(String target, String authorization) throws Exception {
    HttpRequest.Builder b = TestNode.request(node.server(), target).DELETE().header("Authorization", authorization);
    return node.client().send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
  }
}
