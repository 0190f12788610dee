package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The maven and go repository types over real HTTP, measured at the upstream: Maven artifacts
 * verified against the strongest checksum their upstream publishes ({@code .sha512} >
 * {@code .sha256} > {@code .sha1}), metadata checksums consistent with the metadata served,
 * Maven's {@code no-cache} request headers ignored, go's case encoding kept, 404/410 passed
 * through, and the checksum database 404 unless one is configured.
 *
 * <p>Repositories: {@code m2} (maven) and {@code go} (go) on one fake upstream under {@code /m/}
 * and {@code /g/}; {@code godb} (go) on the same proxy with a checksum database under
 * {@code /db/} of a second fake upstream.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MavenGoHttpTest {
  private final Map<String, byte[]> files = new ConcurrentHashMap<>();
  private final Map<String, Integer> statuses = new ConcurrentHashMap<>();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().withUpstream("sumdb").otherwise(this::answer)
      .config(n -> """
          corral.repos {
            godb { type = go, url = "%s", sumdb-url = "%s" }
          }
          """.formatted(n.url("/g/"), n.upstream("sumdb").url("/db")))
      .args(n -> new String[] {"--repo", "m2=maven:" + n.url("/m/"), "--repo", "go=go:" + n.url("/g")});

  /** Both upstreams (the registry and the checksum database) answer from {@code files} and {@code statuses}. */
  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getRawPath();
    Integer status = statuses.get(path);
    byte[] body = files.get(path);
    if (status != null) {
      FakeUpstream.send(exchange, status, "gone".getBytes(UTF_8));
    } else if (body == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
    } else {
      TestNode.ok(exchange, body);
    }
  }

  /** The checksum database's name: its host and port. */
  private String dbName() {
    return node.upstream("sumdb").url("").substring("http://".length());
  }

  private static String hex(String algorithm, byte[] bytes) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(bytes));
  }

  // ---- maven ------------------------------------------------------------------------------------

  @Test
  void aJarIsVerifiedAgainstItsSha1AndEachFileIsFetchedOnce() throws Exception {
    byte[] jar = TestNode.bytes(5000, 1);
    files.put("/m/com/example/ok/1.0/ok-1.0.jar", jar);
    files.put("/m/com/example/ok/1.0/ok-1.0.jar.sha1", (hex("SHA-1", jar) + "  ok-1.0.jar\n").getBytes(UTF_8));

    HttpResponse<byte[]> r = node.get("/m2/com/example/ok/1.0/ok-1.0.jar");
    assertEquals(200, r.statusCode());
    assertArrayEquals(jar, r.body());
    HttpResponse<byte[]> sha1 = node.get("/m2/com/example/ok/1.0/ok-1.0.jar.sha1");
    assertEquals(200, sha1.statusCode());
    assertEquals("HIT", xCache(sha1), "the checksum was read (and cached) to verify the jar");
    assertEquals("HIT", xCache(node.get("/m2/com/example/ok/1.0/ok-1.0.jar")));
    assertEquals(1, node.upstream().requests("/m/com/example/ok/1.0/ok-1.0.jar"));
    assertEquals(1, node.upstream().requests("/m/com/example/ok/1.0/ok-1.0.jar.sha1"));
  }

  @Test
  void aTamperedJarIs502NeverCachedAndLoggedWithBothDigests() throws Exception {
    byte[] jar = TestNode.bytes(3000, 2);
    byte[] tampered = jar.clone();
    tampered[100] ^= 1;
    files.put("/m/com/example/bad/1.0/bad-1.0.jar", tampered);
    files.put("/m/com/example/bad/1.0/bad-1.0.jar.sha1", hex("SHA-1", jar).getBytes(UTF_8));

    Logger fetchLog = (Logger) LoggerFactory.getLogger(dev.corral.core.download.Download.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    fetchLog.addAppender(appender);
    try {
      assertEquals(502, node.get("/m2/com/example/bad/1.0/bad-1.0.jar").statusCode());
      assertEquals(502, node.get("/m2/com/example/bad/1.0/bad-1.0.jar").statusCode());
    } finally {
      fetchLog.detachAppender(appender);
    }
    assertEquals(2, node.upstream().requests("/m/com/example/bad/1.0/bad-1.0.jar"), "bad bytes are never cached");
    String expected = hex("SHA-1", jar);
    String actual = hex("SHA-1", tampered);
    assertTrue(LoggedEvents.of(appender).stream().map(ILoggingEvent::getFormattedMessage).anyMatch(m ->
            m.contains("bad-1.0.jar") && m.contains(expected) && m.contains(actual)),
        "warning with key and both digests: " + appender.list);

    // Once the upstream serves the right bytes, the same key succeeds.
    files.put("/m/com/example/bad/1.0/bad-1.0.jar", jar);
    HttpResponse<byte[]> fixed = node.get("/m2/com/example/bad/1.0/bad-1.0.jar");
    assertEquals(200, fixed.statusCode());
    assertArrayEquals(jar, fixed.body());
  }

  @Test
  void aJarWithoutChecksumIsServedUnverifiedAndCounted() {
    var unverified = node.server().metrics().unverifiedFetches.labelValues("m2");
    double before = unverified.get();
    byte[] jar = TestNode.bytes(100, 3);
    files.put("/m/com/example/nosum/1.0/nosum-1.0.jar", jar);
    HttpResponse<byte[]> r = node.get("/m2/com/example/nosum/1.0/nosum-1.0.jar");
    assertEquals(200, r.statusCode());
    assertArrayEquals(jar, r.body());
    assertEquals(before + 1, unverified.get(), "corral_unverified_fetches_total{repo=m2}");
    for (String alg : new String[] {"sha512", "sha256", "sha1"}) {
      assertEquals(404, node.get("/m2/com/example/nosum/1.0/nosum-1.0.jar." + alg).statusCode());
      assertEquals(1, node.upstream().requests("/m/com/example/nosum/1.0/nosum-1.0.jar." + alg),
          "the not-found ." + alg + " is remembered, not asked again");
    }
    // a verified jar is not counted
    byte[] signed = TestNode.bytes(100, 4);
    files.put("/m/com/example/sum/1.0/sum-1.0.jar", signed);
    files.put("/m/com/example/sum/1.0/sum-1.0.jar.sha256", hexUnchecked("SHA-256", signed).getBytes(UTF_8));
    assertEquals(200, node.get("/m2/com/example/sum/1.0/sum-1.0.jar").statusCode());
    assertEquals(before + 1, unverified.get(), "a jar verified by its .sha256 is not counted");
  }

  /**
   * Item 9: the strongest checksum the upstream publishes verifies a jar. The upstream's .sha1
   * (and .sha256) here match tampered bytes, its .sha512 the real ones: only the strongest
   * catches them; a weaker checksum is not even read when a stronger one is published.
   */
  @Test
  void aJarIsVerifiedAgainstTheStrongestChecksumItsUpstreamPublishes() throws Exception {
    byte[] jar = TestNode.bytes(4000, 5);
    byte[] tampered = jar.clone();
    tampered[200] ^= 1;
    String strong = "/m/com/example/strong/1.0/strong-1.0.jar";
    files.put(strong, tampered);
    files.put(strong + ".sha1", hex("SHA-1", tampered).getBytes(UTF_8));
    files.put(strong + ".sha256", hex("SHA-256", tampered).getBytes(UTF_8));
    files.put(strong + ".sha512", (hex("SHA-512", jar) + "  strong-1.0.jar\n").getBytes(UTF_8));
    assertEquals(502, node.get("/m2/com/example/strong/1.0/strong-1.0.jar").statusCode(),
        "bytes that match only the weaker checksums are refused");
    assertEquals(0, node.upstream().requests(strong + ".sha256"), "a weaker checksum is not read");
    assertEquals(0, node.upstream().requests(strong + ".sha1"));
    files.put(strong, jar);
    HttpResponse<byte[]> r = node.get("/m2/com/example/strong/1.0/strong-1.0.jar");
    assertEquals(200, r.statusCode());
    assertArrayEquals(jar, r.body());
    assertEquals(1, node.upstream().requests(strong + ".sha512"), "the .sha512 is read once, through the cache");

    // no .sha512 published: the .sha256 verifies
    String mid = "/m/com/example/mid/1.0/mid-1.0.jar";
    files.put(mid, tampered);
    files.put(mid + ".sha1", hex("SHA-1", tampered).getBytes(UTF_8));
    files.put(mid + ".sha256", hex("SHA-256", jar).getBytes(UTF_8));
    assertEquals(502, node.get("/m2/com/example/mid/1.0/mid-1.0.jar").statusCode());
    assertEquals(0, node.upstream().requests(mid + ".sha1"), "a weaker checksum is not read");
    files.put(mid, jar);
    assertArrayEquals(jar, node.get("/m2/com/example/mid/1.0/mid-1.0.jar").body());
  }

  private static String hexUnchecked(String algorithm, byte[] bytes) {
    try {
      return hex(algorithm, bytes);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void metadataChecksumsAreThoseOfTheServedMetadata() throws Exception {
    byte[] xml = "<metadata><versioning><latest>1.1</latest></versioning></metadata>".getBytes(UTF_8);
    files.put("/m/com/example/meta/maven-metadata.xml", xml);
    // The upstream's own checksum disagrees (it was written before the last deploy): never used.
    files.put("/m/com/example/meta/maven-metadata.xml.sha1", "0000000000000000000000000000000000000000".getBytes(UTF_8));

    HttpResponse<byte[]> meta = node.get("/m2/com/example/meta/maven-metadata.xml");
    assertArrayEquals(xml, meta.body());
    for (String[] alg : new String[][] {{"sha1", "SHA-1"}, {"md5", "MD5"}, {"sha256", "SHA-256"}, {"sha512", "SHA-512"}}) {
      HttpResponse<byte[]> sum = node.get("/m2/com/example/meta/maven-metadata.xml." + alg[0]);
      assertEquals(200, sum.statusCode(), alg[0]);
      assertEquals(hex(alg[1], meta.body()), new String(sum.body(), UTF_8), alg[0]);
    }
    HttpResponse<byte[]> head = node.client().send(TestNode.request(node.server(), "/m2/com/example/meta/maven-metadata.xml.sha1")
        .method("HEAD", java.net.http.HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofByteArray());
    assertEquals(200, head.statusCode());
    assertEquals(0, head.body().length);
    assertEquals(1, node.upstream().requests("/m/com/example/meta/maven-metadata.xml"));
    assertEquals(0, node.upstream().requests("/m/com/example/meta/maven-metadata.xml.sha1"));
    assertEquals(404, node.get("/m2/com/example/none/maven-metadata.xml.sha1").statusCode());
  }

  @Test
  void mavensNoCacheRequestHeadersDoNotCauseRefetches() {
    byte[] pom = "<project/>".getBytes(UTF_8);
    files.put("/m/com/example/nc/1.0/nc-1.0.pom", pom);
    files.put("/m/com/example/nc/maven-metadata.xml", "<metadata/>".getBytes(UTF_8));
    for (int i = 0; i < 3; i++) {
      for (String path : List.of("/m2/com/example/nc/1.0/nc-1.0.pom", "/m2/com/example/nc/maven-metadata.xml")) {
        HttpResponse<byte[]> r = node.get(path, "Cache-Control", "no-cache", "Pragma", "no-cache");
        assertEquals(200, r.statusCode());
        if (i > 0) {
          assertEquals("HIT", xCache(r), path);
        }
      }
    }
    assertEquals(1, node.upstream().requests("/m/com/example/nc/1.0/nc-1.0.pom"));
    assertEquals(1, node.upstream().requests("/m/com/example/nc/maven-metadata.xml"));
  }

  @Test
  void hostileMavenPathsAreRejected() {
    int before = node.upstream().requests();
    for (String p : List.of("/m2/com/example/%2e%2e/x.jar", "/m2/com/%22x%22/1/x.jar", "/m2/com/a%20b/1/x.jar",
        "/m2/com/%5c/1/x.jar", "/m2/com/example/a%2fb/x.jar")) {
      assertEquals(400, node.get(p).statusCode(), p);
    }
    assertEquals(before, node.upstream().requests());
  }

  // ---- go ---------------------------------------------------------------------------------------

  @Test
  void caseEncodedModulesGoUpstreamInTheGoproxyEncoding() {
    byte[] mod = "module example.com/Upper\n".getBytes(UTF_8);
    files.put("/g/example.com/!upper/@v/v0.1.0.mod", mod);
    HttpResponse<byte[]> r = node.get("/go/example.com/%21upper/@v/v0.1.0.mod");
    assertEquals(200, r.statusCode());
    assertArrayEquals(mod, r.body());
    assertTrue(node.upstream().targets.contains("/g/example.com/!upper/@v/v0.1.0.mod"), node.upstream().targets.toString());
    // The same module asked with a raw '!' is the same key.
    assertEquals("HIT", xCache(node.get("/go/example.com/!upper/@v/v0.1.0.mod")));
    assertEquals(400, node.get("/go/example.com/Upper/@v/v0.1.0.mod").statusCode());
    assertEquals(400, node.get("/go/example.com/upper/@v/V0.1.0.mod").statusCode());
    assertEquals(1, node.upstream().requests("/g/example.com/!upper/@v/v0.1.0.mod"));
  }

  @Test
  void goNotFoundAndGoneArePassedThrough() {
    statuses.put("/g/example.com/gone/@v/list", 410);
    HttpResponse<byte[]> missing = node.get("/go/example.com/missing/@v/list");
    assertEquals(404, missing.statusCode());
    assertEquals(410, node.get("/go/example.com/gone/@v/list").statusCode());
    assertEquals(404, node.get("/go/example.com/missing/@v/v1.0.0.zip").statusCode());
    assertEquals(1, node.upstream().requests("/g/example.com/missing/@v/list"));
    // Remembered briefly (negative TTL): no second upstream request.
    assertEquals(404, node.get("/go/example.com/missing/@v/list").statusCode());
    assertEquals(1, node.upstream().requests("/g/example.com/missing/@v/list"));
  }

  @Test
  void listAndZipAreServedAndCached() {
    byte[] list = "v1.0.0\nv1.1.0\n".getBytes(UTF_8);
    byte[] zip = TestNode.bytes(4000, 4);
    files.put("/g/example.com/demo/@v/list", list);
    files.put("/g/example.com/demo/@v/v1.0.0.zip", zip);
    assertArrayEquals(list, node.get("/go/example.com/demo/@v/list").body());
    assertArrayEquals(zip, node.get("/go/example.com/demo/@v/v1.0.0.zip").body());
    assertEquals("HIT", xCache(node.get("/go/example.com/demo/@v/list")));
    assertEquals("HIT", xCache(node.get("/go/example.com/demo/@v/v1.0.0.zip")));
    assertEquals(1, node.upstream().requests("/g/example.com/demo/@v/list"));
    assertEquals(1, node.upstream().requests("/g/example.com/demo/@v/v1.0.0.zip"));
  }

  @Test
  void sumdbIs404WithoutAConfiguredDatabase() {
    int before = node.upstream().requests() + node.upstream("sumdb").requests();
    assertEquals(404, node.get("/go/sumdb/sum.example/supported").statusCode());
    assertEquals(404, node.get("/go/sumdb/sum.example/lookup/example.com/demo@v1.0.0").statusCode());
    assertEquals(404, node.get("/go/sumdb/" + dbName() + "/supported").statusCode());
    assertEquals(before, node.upstream().requests() + node.upstream("sumdb").requests(), "nothing asked upstream");
  }

  @Test
  void aConfiguredSumdbIsProxied() {
    files.put("/db/latest", "go.sum database tree\n5\n".getBytes(UTF_8));
    files.put("/db/lookup/example.com/!upper@v0.1.0", "1\nexample.com/Upper v0.1.0 h1:x=\n".getBytes(UTF_8));
    assertEquals(200, node.get("/godb/sumdb/" + dbName() + "/supported").statusCode());
    assertEquals(404, node.get("/godb/sumdb/sum.example/supported").statusCode());
    HttpResponse<byte[]> latest = node.get("/godb/sumdb/" + dbName() + "/latest");
    assertEquals(200, latest.statusCode());
    assertArrayEquals(files.get("/db/latest"), latest.body());
    HttpResponse<byte[]> lookup = node.get("/godb/sumdb/" + dbName() + "/lookup/example.com/%21upper@v0.1.0");
    assertEquals(200, lookup.statusCode());
    assertEquals(1, node.upstream("sumdb").requests("/db/latest"));
    assertEquals(1, node.upstream("sumdb").requests("/db/lookup/example.com/!upper@v0.1.0"));
  }
}
