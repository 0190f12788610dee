package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The npm and pypi repository types over real HTTP against a fake upstream: rewriting with the
 * base URL a client reached Corral at, {@code Vary}, variants as separate keys, tarballs and
 * wheels resolved through cached metadata, and tampered bytes answered 502, never cached, and
 * logged with both digests.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryHttpTest {
  record Doc(String type, byte[] body) {}

  private static final String CORGI = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";
  private static final String PIP_ACCEPT =
      "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";

  private final Map<String, Doc> docs = new ConcurrentHashMap<>();
  /** Paths answered by the request's Accept: [JSON form, HTML form]. */
  private final Map<String, Doc[]> negotiated = new ConcurrentHashMap<>();
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().otherwise(this::answer).config(n -> """
      corral.repos {
        npm { type = npm, url = "%s", retries = 0, allowed-hosts = ["%s"] }
        py { type = pypi, url = "%s", retries = 0 }
      }
      """.formatted(n.url("/registry/"), java.net.URI.create(n.url("/")).getRawAuthority(), n.url("/simple/")));
  // The npm tarballs some packuments name under /cdn/, outside the registry's path, stand for a
  // listed file host (allowed-hosts); UpstreamConfinementIT covers the unlisted case.
  private final ListAppender<ILoggingEvent> fetchLog = new ListAppender<>();

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    Doc[] forms = negotiated.get(path);
    String accept = exchange.getRequestHeaders().getFirst("Accept");
    Doc d = forms == null ? docs.get(path) : forms[accept != null && accept.contains("+json") ? 0 : 1];
    if (d == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.getResponseHeaders().add("Content-Type", d.type());
    FakeUpstream.send(exchange, 200, d.body());
  }

  @BeforeAll
  void listen() {
    fetchLog.start();
    ((Logger) LoggerFactory.getLogger(dev.corral.core.download.Download.class)).addAppender(fetchLog);
  }

  @AfterAll
  void stopListening() {
    ((Logger) LoggerFactory.getLogger(dev.corral.core.download.Download.class)).detachAppender(fetchLog);
  }

  private HttpResponse<byte[]> get(String target, String... headers) {
    return node.get(target, headers);
  }

  private static String text(HttpResponse<byte[]> r) {
    return new String(r.body(), StandardCharsets.UTF_8);
  }

  private static String sri512(byte[] b) throws Exception {
    return "sha512-" + Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(b));
  }

  private static String hex(String algorithm, byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(b));
  }

  private void json(String path, String body) {
    docs.put(path, new Doc("application/json", body.getBytes(StandardCharsets.UTF_8)));
  }

  private String packument(String name, String version, String tarballUrl, byte[] tarball) throws Exception {
    return """
        {"name":"%s","dist-tags":{"latest":"%s"},"versions":{"%s":{"name":"%s","version":"%s",
         "dist":{"tarball":"%s","integrity":"%s","shasum":"%s"}}}}
        """.formatted(name, version, version, name, version, tarballUrl, sri512(tarball), hex("SHA-1", tarball));
  }

  /** Lines Fetch logged at WARN that mention {@code text}. */
  private String warnings(String text) {
    return LoggedEvents.of(fetchLog).stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN)
        .map(ILoggingEvent::getFormattedMessage).filter(m -> m.contains(text))
        .reduce("", (a, b) -> a + b + "\n");
  }

  // ---- npm ------------------------------------------------------------------------------------

  @Test
  void packumentIsRewrittenToTheClientsBaseUrlWithVaryAndCachedPerVariant() throws Exception {
    byte[] tgz = TestNode.bytes(3000, 1);
    json("/registry/alpha", packument("alpha", "1.0.0", node.upstream().url("/registry/alpha/-/alpha-1.0.0.tgz"), tgz));
    docs.put("/registry/alpha/-/alpha-1.0.0.tgz", new Doc("application/octet-stream", tgz));

    HttpResponse<byte[]> full = get("/npm/alpha", "Accept", "application/json");
    assertEquals(200, full.statusCode());
    assertEquals("Accept, Accept-Encoding", full.headers().firstValue("Vary").orElse(null));
    assertEquals("MISS", TestNode.xCache(full));
    assertTrue(text(full).contains("\"tarball\":\"" + node.base() + "/npm/alpha/-/alpha-1.0.0.tgz\""), text(full));
    assertFalse(text(full).contains(node.upstream().url("/")), "no upstream URL is served");

    // a client's own Host / X-Forwarded-Host never changes what is served (no trusted proxy here)
    HttpResponse<byte[]> hostile = get("/npm/alpha", "Accept", "application/json", "X-Forwarded-Host", "evil.example",
        "X-Forwarded-Proto", "https");
    assertEquals("HIT", TestNode.xCache(hostile));
    assertArrayEquals(full.body(), hostile.body());

    HttpResponse<byte[]> corgi = get("/npm/alpha", "Accept", CORGI);
    assertEquals(200, corgi.statusCode());
    assertEquals("MISS", TestNode.xCache(corgi), "the abbreviated form is its own key");
    assertEquals("Accept, Accept-Encoding", corgi.headers().firstValue("Vary").orElse(null));
    assertEquals("HIT", TestNode.xCache(get("/npm/alpha", "Accept", CORGI)));
    assertEquals(2, node.upstream().requests("/registry/alpha"));
    // each variant is fetched with its own Accept, never the client's header as it came
    assertEquals(java.util.Set.of("application/json", "application/vnd.npm.install-v1+json"),
        node.upstream().seen.stream().filter(x -> x.path().equals("/registry/alpha")).map(x -> x.header("Accept"))
            .collect(java.util.stream.Collectors.toSet()));

    HttpResponse<byte[]> t = get("/npm/alpha/-/alpha-1.0.0.tgz");
    assertEquals(200, t.statusCode());
    assertArrayEquals(tgz, t.body());
    assertEquals(1, node.upstream().requests("/registry/alpha/-/alpha-1.0.0.tgz"));
  }

  @Test
  void scopedPackumentInBothSpellingsIsOneFetchAndItsTarballComesFromTheUrlThePackumentNames() throws Exception {
    byte[] tgz = TestNode.bytes(5000, 2);
    json("/registry/@demo/scoped",
        packument("@demo/scoped", "2.0.0", node.upstream().url("/cdn/scoped-2.0.0.tgz"), tgz));
    docs.put("/cdn/scoped-2.0.0.tgz", new Doc("application/octet-stream", tgz));

    HttpResponse<byte[]> encoded = get("/npm/@demo%2fscoped", "Accept", "application/json");
    assertEquals(200, encoded.statusCode(), text(encoded));
    HttpResponse<byte[]> plain = get("/npm/@demo/scoped", "Accept", "application/json");
    assertEquals("HIT", TestNode.xCache(plain));
    assertEquals(1, node.upstream().requests("/registry/@demo/scoped"));
    assertTrue(node.upstream().seen.stream().anyMatch(s -> s.path().equals("/registry/@demo/scoped")));
    assertTrue(text(plain).contains(node.base() + "/npm/@demo/scoped/-/scoped-2.0.0.tgz"), text(plain));

    HttpResponse<byte[]> t = get("/npm/@demo/scoped/-/scoped-2.0.0.tgz");
    assertEquals(200, t.statusCode());
    assertArrayEquals(tgz, t.body());
    assertEquals(1, node.upstream().requests("/cdn/scoped-2.0.0.tgz"));
    assertEquals(0, node.upstream().requests("/registry/@demo/scoped/-/scoped-2.0.0.tgz"));
  }

  @Test
  void tarballWithoutAPackumentIsFetchedFromTheStandardPath() {
    byte[] tgz = TestNode.bytes(100, 3);
    docs.put("/registry/lonely/-/lonely-1.0.0.tgz", new Doc("application/octet-stream", tgz));
    HttpResponse<byte[]> t = get("/npm/lonely/-/lonely-1.0.0.tgz");
    assertEquals(200, t.statusCode());
    assertArrayEquals(tgz, t.body());
    // K1/B1: the fetch asks for the packument through the cache (once) to learn the digest; the
    // upstream has none, so the tarball comes from the standard path, unverified.
    assertEquals(1, node.upstream().requests("/registry/lonely"), "the fetch read the packument once");
    assertEquals("HIT", TestNode.xCache(get("/npm/lonely/-/lonely-1.0.0.tgz")));
    assertEquals(1, node.upstream().requests("/registry/lonely/-/lonely-1.0.0.tgz"));
  }

  @Test
  void tamperedTarballIs502NotCachedAndLoggedWithBothDigests() throws Exception {
    byte[] good = TestNode.bytes(4000, 4);
    byte[] bad = good.clone();
    bad[100] ^= 1;
    json("/registry/tampered", packument("tampered", "1.0.0", node.upstream().url("/registry/tampered/-/tampered-1.0.0.tgz"), good));
    docs.put("/registry/tampered/-/tampered-1.0.0.tgz", new Doc("application/octet-stream", bad));
    assertEquals(200, get("/npm/tampered", "Accept", "application/json").statusCode());

    HttpResponse<byte[]> first = get("/npm/tampered/-/tampered-1.0.0.tgz");
    assertEquals(502, first.statusCode());
    assertNull(TestNode.xCache(first));
    HttpResponse<byte[]> second = get("/npm/tampered/-/tampered-1.0.0.tgz");
    assertEquals(502, second.statusCode());
    assertEquals(2, node.upstream().requests("/registry/tampered/-/tampered-1.0.0.tgz"), "the bad bytes were not cached");
    String w = warnings("/registry/tampered/-/tampered-1.0.0.tgz");
    assertTrue(w.contains(hex("SHA-512", good)) && w.contains(hex("SHA-512", bad)), "warning: " + w);
  }

  @Test
  void rewrittenPackumentAnswersConditionalAndHeadRequests() throws Exception {
    byte[] tgz = TestNode.bytes(200, 9);
    json("/registry/cond", packument("cond", "1.0.0", node.upstream().url("/registry/cond/-/cond-1.0.0.tgz"), tgz));
    HttpResponse<byte[]> first = get("/npm/cond", "Accept", "application/json");
    String etag = first.headers().firstValue("ETag").orElseThrow();
    HttpResponse<byte[]> again = get("/npm/cond", "Accept", "application/json", "If-None-Match", etag);
    assertEquals(304, again.statusCode());
    HttpResponse<byte[]> head = node.client().send(TestNode.request(node.server(), "/npm/cond")
        .method("HEAD", java.net.http.HttpRequest.BodyPublishers.noBody()).header("Accept", "application/json").build(),
        HttpResponse.BodyHandlers.ofByteArray());
    assertEquals(200, head.statusCode());
    assertEquals(0, head.body().length);
    assertEquals(String.valueOf(first.body().length), head.headers().firstValue("Content-Length").orElse(null));
    assertEquals("Accept, Accept-Encoding", head.headers().firstValue("Vary").orElse(null));
    assertEquals(1, node.upstream().requests("/registry/cond"));
  }

  @Test
  void otherNpmEndpointsAreNotFoundOrRefused() {
    assertEquals(404, get("/npm/-/v1/search?text=x").statusCode());
    assertEquals(404, get("/npm/-/ping").statusCode());
    assertEquals(404, get("/npm/alpha/1.0.0").statusCode());
    assertEquals(400, get("/npm/%2e%2e/x").statusCode());
    assertEquals(400, get("/npm/a%2fb").statusCode());
    assertEquals(400, get("/npm/@demo%2f..%2fx").statusCode());
  }

  // ---- pypi -----------------------------------------------------------------------------------

  private String wheelName(String project) {
    return project.replace('-', '_') + "-1.0.0-py3-none-any.whl";
  }

  private byte[] publishJson(String project, byte[] wheel, byte[] metadata) throws Exception {
    String file = wheelName(project);
    docs.put("/files/" + file, new Doc("application/octet-stream", wheel));
    docs.put("/files/" + file + ".metadata", new Doc("application/octet-stream", metadata));
    String page = """
        {"meta":{"api-version":"1.0"},"name":"%s","files":[{"filename":"%s","url":"../../files/%s",
         "hashes":{"sha256":"%s"},"core-metadata":{"sha256":"%s"}}]}
        """.formatted(project, file, file, hex("SHA-256", wheel), hex("SHA-256", metadata));
    docs.put("/simple/" + project + "/", new Doc("application/vnd.pypi.simple.v1+json", page.getBytes(StandardCharsets.UTF_8)));
    return page.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void jsonPageKeepsItsContentTypeAndPointsFilesAtCorral() throws Exception {
    byte[] wheel = TestNode.bytes(2000, 5);
    byte[] metadata = "Metadata-Version: 2.1\nName: json-pkg\nVersion: 1.0.0\n".getBytes(StandardCharsets.UTF_8);
    publishJson("json-pkg", wheel, metadata);

    HttpResponse<byte[]> page = get("/py/JSON_Pkg/", "Accept", PIP_ACCEPT);
    assertEquals(200, page.statusCode(), text(page));
    assertEquals("application/vnd.pypi.simple.v1+json", page.headers().firstValue("Content-Type").orElse(null));
    assertEquals("Accept, Accept-Encoding", page.headers().firstValue("Vary").orElse(null));
    String files = node.base() + "/py/-/files/json-pkg/";
    assertTrue(text(page).contains("\"url\":\"" + files + wheelName("json-pkg") + "\""), text(page));
    assertEquals("HIT", TestNode.xCache(get("/py/json.pkg/", "Accept", PIP_ACCEPT)), "normalised key");

    HttpResponse<byte[]> m = get("/py/-/files/json-pkg/" + wheelName("json-pkg") + ".metadata");
    assertEquals(200, m.statusCode());
    assertArrayEquals(metadata, m.body());
    HttpResponse<byte[]> w = get("/py/-/files/json-pkg/" + wheelName("json-pkg"));
    assertEquals(200, w.statusCode());
    assertArrayEquals(wheel, w.body());
    assertEquals(1, node.upstream().requests("/simple/json-pkg/"), "the file requests read the cached page");
    assertEquals(404, get("/py/-/files/json-pkg/json_pkg-9.9.9-py3-none-any.whl").statusCode());
    assertEquals(0, node.upstream().requests("/files/json_pkg-9.9.9-py3-none-any.whl"), "never fetched: the page does not name it");
  }

  @Test
  void htmlPageKeepsItsContentTypeFragmentsAndMetadataAttributes() throws Exception {
    byte[] wheel = TestNode.bytes(1500, 6);
    String file = wheelName("html-pkg");
    docs.put("/elsewhere/" + file, new Doc("application/octet-stream", wheel));
    String html = "<!DOCTYPE html><html><body><a href=\"" + node.upstream().url("/elsewhere/" + file) + "#sha256="
        + hex("SHA-256", wheel) + "\" data-requires-python=\"&gt;=3.8\">" + file + "</a></body></html>";
    docs.put("/simple/html-pkg/", new Doc("text/html; charset=utf-8", html.getBytes(StandardCharsets.UTF_8)));

    HttpResponse<byte[]> page = get("/py/html-pkg/", "Accept", "text/html");
    assertEquals(200, page.statusCode());
    assertTrue(page.headers().firstValue("Content-Type").orElse("").startsWith("text/html"));
    assertEquals("Accept, Accept-Encoding", page.headers().firstValue("Vary").orElse(null));
    assertTrue(text(page).contains("href=\"" + node.base() + "/py/-/files/html-pkg/" + file + "#sha256=" + hex("SHA-256", wheel)
        + "\" data-requires-python=\"&gt;=3.8\""), text(page));

    HttpResponse<byte[]> w = get("/py/-/files/html-pkg/" + file);
    assertEquals(200, w.statusCode());
    assertArrayEquals(wheel, w.body());
    assertEquals(1, node.upstream().requests("/elsewhere/" + file));
    assertEquals(404, get("/py/-/files/html-pkg/" + file + ".metadata").statusCode(), "the page offers no metadata");
  }

  @Test
  void pageVariantsAreNegotiatedWithTheUpstreamAndKeepTheirContentTypes() throws Exception {
    byte[] wheel = TestNode.bytes(800, 10);
    String file = wheelName("nego-pkg");
    docs.put("/files/" + file, new Doc("application/octet-stream", wheel));
    String json = "{\"meta\":{\"api-version\":\"1.0\"},\"name\":\"nego-pkg\",\"files\":[{\"filename\":\"" + file
        + "\",\"url\":\"../../files/" + file + "\",\"hashes\":{\"sha256\":\"" + hex("SHA-256", wheel) + "\"}}]}";
    String html = "<a href=\"../../files/" + file + "#sha256=" + hex("SHA-256", wheel) + "\">" + file + "</a>";
    // a negotiating upstream: JSON to a JSON Accept, HTML otherwise
    negotiated.put("/simple/nego-pkg/", new Doc[] {
        new Doc("application/vnd.pypi.simple.v1+json", json.getBytes(StandardCharsets.UTF_8)),
        new Doc("text/html", html.getBytes(StandardCharsets.UTF_8))});

    HttpResponse<byte[]> asJson = get("/py/nego-pkg/", "Accept", PIP_ACCEPT);
    assertEquals("application/vnd.pypi.simple.v1+json", asJson.headers().firstValue("Content-Type").orElse(null));
    assertTrue(text(asJson).contains("\"url\":\"" + node.base() + "/py/-/files/nego-pkg/" + file + "\""), text(asJson));
    HttpResponse<byte[]> asHtml = get("/py/nego-pkg/", "Accept", "text/html");
    assertTrue(asHtml.headers().firstValue("Content-Type").orElse("").startsWith("text/html"));
    assertTrue(text(asHtml).contains("href=\"" + node.base() + "/py/-/files/nego-pkg/" + file + "#sha256="), text(asHtml));
    assertEquals(java.util.Set.of("application/vnd.pypi.simple.v1+json", "text/html"),
        node.upstream().seen.stream().filter(x -> x.path().equals("/simple/nego-pkg/")).map(x -> x.header("Accept"))
            .collect(java.util.stream.Collectors.toSet()));
    assertArrayEquals(wheel, get("/py/-/files/nego-pkg/" + file).body());
  }

  @Test
  void fileRequestWithNoPageCachedReadsThePageOnce() throws Exception {
    byte[] wheel = TestNode.bytes(1000, 7);
    publishJson("cold-pkg", wheel, "m".getBytes(StandardCharsets.UTF_8));
    HttpResponse<byte[]> w = get("/py/-/files/cold-pkg/" + wheelName("cold-pkg"));
    assertEquals(200, w.statusCode());
    assertArrayEquals(wheel, w.body());
    assertEquals(1, node.upstream().requests("/simple/cold-pkg/"));
    assertEquals(404, get("/py/-/files/no-such-project/x-1.0.whl").statusCode());
  }

  @Test
  void tamperedWheelIs502NotCachedAndLoggedWithBothDigests() throws Exception {
    byte[] good = TestNode.bytes(3000, 8);
    byte[] bad = good.clone();
    bad[7] ^= 1;
    publishJson("bad-pkg", good, "m".getBytes(StandardCharsets.UTF_8));
    String file = wheelName("bad-pkg");
    docs.put("/files/" + file, new Doc("application/octet-stream", bad));

    assertEquals(502, get("/py/-/files/bad-pkg/" + file).statusCode());
    assertEquals(502, get("/py/-/files/bad-pkg/" + file).statusCode());
    assertEquals(2, node.upstream().requests("/files/" + file), "the bad bytes were not cached");
    String w = warnings("/files/" + file);
    assertTrue(w.contains(hex("SHA-256", good)) && w.contains(hex("SHA-256", bad)), "warning: " + w);
  }

  @Test
  void otherPypiPathsAreNotFoundOrRefused() {
    assertEquals(400, get("/py/").statusCode());
    assertEquals(404, get("/py/-/files/x").statusCode());
    assertEquals(400, get("/py/not%20a%20name/").statusCode());
    assertEquals(400, get("/py/a%2fb/").statusCode());
  }
}
