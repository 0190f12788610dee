package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Group repositories (issue 16) through a whole node and two fake upstreams on loopback, counted
 * at each upstream: {@code files} is a generic group over {@code one} (the node's upstream, under
 * {@code /one/}) and {@code two} (a second upstream, under {@code /two/}); {@code m2} a maven
 * group over {@code ma} and {@code mb}, laid out the same way. Both upstreams answer from
 * {@link TestNodeExtension#paths}, so what each member has is told by the path's prefix, and
 * what each was asked by its own request count. The node's interval time is a
 * {@link ManualTicker}, so a member's remembered not-found expires when the test says.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GroupHttpTest {
  private final ManualTicker ticker = new ManualTicker();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().withUpstream("second").ticker(ticker)
      .config(n -> """
          corral.repo-defaults { retries = 0, negative-ttl = 1m }
          corral.repos {
            one { type = generic, url = "%s" }
            two { type = generic, url = "%s" }
            files { type = group, members = [one, two] }
            ma { type = maven, url = "%s" }
            mb { type = maven, url = "%s" }
            ga { type = go, url = "%s" }
            gb { type = go, url = "%s" }
            gg { type = group, members = [ga, gb] }
            pa { type = pypi, url = "%s" }
            pb { type = pypi, url = "%s" }
            pg { type = group, members = [pa, pb] }
          }
          """.formatted(n.url("/one/"), n.upstream("second").url("/two/"), n.url("/ma/"),
              n.upstream("second").url("/mb/"), n.url("/ga/"), n.upstream("second").url("/gb/"),
              n.url("/pa/simple/"), n.upstream("second").url("/pb/simple/")))
      .args(n -> new String[] {"--repo", "m2=group:ma,mb"});

  private FakeUpstream first() {
    return node.upstream();
  }

  private FakeUpstream second() {
    return node.upstream("second");
  }

  private static FakeUpstream.Handler ok(String body) {
    return (exchange, n) -> FakeUpstream.send(exchange, 200, body.getBytes(UTF_8));
  }

  private static FakeUpstream.Handler status(int status) {
    return (exchange, n) -> FakeUpstream.send(exchange, status, "no".getBytes(UTF_8));
  }

  private double memberFailures(String group, String member) {
    return node.server().metrics().groupMemberFailures.labelValues(group, member).get();
  }

  private static String body(HttpResponse<byte[]> r) {
    return new String(r.body(), UTF_8);
  }

  @Test
  void anArtifactOnlyInTheSecondMemberIsServedAndTheFirstMembersNotFoundIsRemembered() {
    node.paths.put("/two/lib/only-second.bin", ok("second's bytes"));
    HttpResponse<byte[]> r = node.get("/files/lib/only-second.bin");
    assertEquals(200, r.statusCode());
    assertEquals("second's bytes", body(r));
    assertEquals("MISS", xCache(r));
    assertTrue(r.headers().firstValue("Warning").isEmpty(), "a member's not-found is no failure");
    assertEquals(1, first().requests("/one/lib/only-second.bin"));
    assertEquals(1, second().requests("/two/lib/only-second.bin"));

    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> again = node.get("/files/lib/only-second.bin");
      assertEquals(200, again.statusCode());
      assertEquals("HIT", xCache(again));
    }
    assertEquals(1, first().requests("/one/lib/only-second.bin"),
        "within negative-ttl the first member's not-found is remembered, not asked again");
    assertEquals(1, second().requests("/two/lib/only-second.bin"), "the second member's copy is a hit");

    ticker.advance(Duration.ofMinutes(1).plusSeconds(1));
    assertEquals(200, node.get("/files/lib/only-second.bin").statusCode());
    assertEquals(2, first().requests("/one/lib/only-second.bin"), "past negative-ttl the first member is asked again");
  }

  @Test
  void theFirstMemberWinsWhenBothHaveIt() {
    node.paths.put("/one/lib/both.bin", ok("first's bytes"));
    node.paths.put("/two/lib/both.bin", ok("second's bytes"));
    HttpResponse<byte[]> r = node.get("/files/lib/both.bin");
    assertEquals("first's bytes", body(r));
    assertEquals(0, second().requests("/two/lib/both.bin"), "a later member is not asked when an earlier one answers");
  }

  @Test
  void aFailingMemberIsSkippedWithAWarningAndCounted() {
    node.paths.put("/one/lib/flaky.bin", status(502));
    node.paths.put("/two/lib/flaky.bin", ok("from two"));
    double before = memberFailures("files", "one");
    HttpResponse<byte[]> r = node.get("/files/lib/flaky.bin");
    assertEquals(200, r.statusCode());
    assertEquals("from two", body(r));
    assertEquals(List.of("199 corral \"member one failed: 502\""), r.headers().allValues("Warning"));
    assertEquals(before + 1, memberFailures("files", "one"));
    assertEquals(0, memberFailures("files", "two"));
  }

  @Test
  void onlyWhenNoMemberAnswersIsItAnError() {
    node.paths.put("/one/lib/down.bin", status(502));
    node.paths.put("/two/lib/down.bin", status(503));
    double one = memberFailures("files", "one");
    double two = memberFailures("files", "two");
    HttpResponse<byte[]> down = node.get("/files/lib/down.bin");
    assertEquals(502, down.statusCode(), body(down));
    assertTrue(body(down).contains("no member of files could answer"), body(down));
    assertEquals(one + 1, memberFailures("files", "one"));
    assertEquals(two + 1, memberFailures("files", "two"));

    HttpResponse<byte[]> missing = node.get("/files/lib/nowhere.bin");
    assertEquals(404, missing.statusCode());
    assertTrue(missing.headers().firstValue("Warning").isEmpty());
    assertEquals(1, first().requests("/one/lib/nowhere.bin"));
    assertEquals(1, second().requests("/two/lib/nowhere.bin"));
  }

  private static final String META_A = """
      <?xml version="1.0" encoding="UTF-8"?>
      <metadata>
        <groupId>org.example</groupId>
        <artifactId>lib</artifactId>
        <versioning>
          <latest>1.1</latest>
          <release>1.1</release>
          <versions><version>1.0</version><version>1.1</version></versions>
          <lastUpdated>20260101000000</lastUpdated>
        </versioning>
      </metadata>
      """;
  private static final String META_B = """
      <?xml version="1.0" encoding="UTF-8"?>
      <metadata>
        <groupId>org.example</groupId>
        <artifactId>lib</artifactId>
        <versioning>
          <latest>2.0</latest>
          <release>2.0</release>
          <versions><version>1.0</version><version>2.0</version></versions>
          <lastUpdated>20260301000000</lastUpdated>
        </versioning>
      </metadata>
      """;

  @Test
  void mavenMetadataIsMergedAndItsChecksumIsOfTheMergedBytes() throws Exception {
    node.paths.put("/ma/org/example/lib/maven-metadata.xml", ok(META_A));
    node.paths.put("/mb/org/example/lib/maven-metadata.xml", ok(META_B));
    HttpResponse<byte[]> r = node.get("/m2/org/example/lib/maven-metadata.xml");
    assertEquals(200, r.statusCode());
    String xml = body(r);
    assertTrue(xml.contains("<version>1.0</version>") && xml.contains("<version>1.1</version>")
        && xml.contains("<version>2.0</version>"), xml);
    assertEquals(1, xml.split("<version>1.0</version>", -1).length - 1, "a version both have is listed once: " + xml);
    assertTrue(xml.contains("<latest>2.0</latest>") && xml.contains("<release>2.0</release>"), xml);
    assertTrue(xml.contains("<lastUpdated>20260301000000</lastUpdated>"), xml);
    assertEquals("MERGED", xCache(r));
    String etag = r.headers().firstValue("ETag").orElseThrow();
    assertEquals(304, node.get("/m2/org/example/lib/maven-metadata.xml", "If-None-Match", etag).statusCode());

    HttpResponse<byte[]> sha1 = node.get("/m2/org/example/lib/maven-metadata.xml.sha1");
    assertEquals(200, sha1.statusCode());
    assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(r.body())), body(sha1));
    assertEquals(1, node.upstream().requests("/ma/org/example/lib/maven-metadata.xml"), "each member's document is cached");
    assertEquals(1, second().requests("/mb/org/example/lib/maven-metadata.xml"));
  }

  @Test
  void aMavenArtifactOnlyInTheSecondMemberIsVerifiedAgainstThatMembersChecksum() throws Exception {
    byte[] jar = "a jar only in mb".getBytes(UTF_8);
    String sha1 = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(jar));
    node.paths.put("/mb/org/example/lib/2.0/lib-2.0.jar", (exchange, n) -> FakeUpstream.send(exchange, 200, jar));
    node.paths.put("/mb/org/example/lib/2.0/lib-2.0.jar.sha1", ok(sha1));
    node.paths.put("/mb/org/example/bad/2.0/bad-2.0.jar", ok("tampered"));
    node.paths.put("/mb/org/example/bad/2.0/bad-2.0.jar.sha1", ok(sha1));
    HttpResponse<byte[]> r = node.get("/m2/org/example/lib/2.0/lib-2.0.jar");
    assertEquals(200, r.statusCode());
    assertEquals("a jar only in mb", body(r));
    assertEquals(1, second().requests("/mb/org/example/lib/2.0/lib-2.0.jar.sha1"), "verified against mb's own checksum");
    HttpResponse<byte[]> bad = node.get("/m2/org/example/bad/2.0/bad-2.0.jar");
    assertEquals(502, bad.statusCode(), "bytes that do not match the member's checksum are never served");
  }

  @Test
  void goVersionListsAreTheUnionAndAVersionOnlyInTheSecondIsServed() {
    node.paths.put("/ga/example.com/mod/@v/list", ok("v1.0.0\nv1.1.0\n"));
    node.paths.put("/gb/example.com/mod/@v/list", ok("v1.10.0\nv1.0.0\n"));
    node.paths.put("/gb/example.com/mod/@v/v1.10.0.info", ok("{\"Version\":\"v1.10.0\"}"));
    HttpResponse<byte[]> list = node.get("/gg/example.com/mod/@v/list");
    assertEquals(200, list.statusCode());
    assertEquals("v1.0.0\nv1.1.0\nv1.10.0\n", body(list));
    HttpResponse<byte[]> info = node.get("/gg/example.com/mod/@v/v1.10.0.info");
    assertEquals(200, info.statusCode());
    assertEquals("{\"Version\":\"v1.10.0\"}", body(info));
    assertEquals(1, first().requests("/ga/example.com/mod/@v/v1.10.0.info"));
  }

  private static FakeUpstream.Handler html(String body) {
    return (exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "text/html");
      FakeUpstream.send(exchange, 200, body.getBytes(UTF_8));
    };
  }

  @Test
  void aPypiPageIsTheUnionOfTheMembersPagesAndAFailingMemberIsNamed() {
    node.paths.put("/pa/simple/demo/", html("<html><body><a href=\"../../files/demo-1.0.tar.gz#sha256="
        + "a".repeat(64) + "\">demo-1.0.tar.gz</a></body></html>"));
    node.paths.put("/pb/simple/demo/", html("<html><body><a href=\"../../files/demo-1.0.tar.gz#sha256="
        + "b".repeat(64) + "\">demo-1.0.tar.gz</a><a href=\"../../files/demo-2.0.tar.gz#sha256=" + "c".repeat(64)
        + "\">demo-2.0.tar.gz</a></body></html>"));
    HttpResponse<byte[]> page = node.get("/pg/demo/");
    assertEquals(200, page.statusCode());
    String html = body(page);
    assertTrue(html.contains(node.base() + "/pg/-/files/demo/demo-1.0.tar.gz#sha256=" + "a".repeat(64)), html);
    assertTrue(html.contains(node.base() + "/pg/-/files/demo/demo-2.0.tar.gz#sha256=" + "c".repeat(64)), html);
    assertTrue(!html.contains("b".repeat(64)), "the first member wins for a file name: " + html);
    assertEquals(List.of("Accept, Accept-Encoding"), page.headers().allValues("Vary"));
    assertEquals("MERGED", xCache(page));

    node.paths.put("/pa/simple/down/", status(502));
    node.paths.put("/pb/simple/down/", html("<html><body><a href=\"../../files/down-1.0.tar.gz\">down-1.0.tar.gz</a>"
        + "</body></html>"));
    double before = memberFailures("pg", "pa");
    HttpResponse<byte[]> partial = node.get("/pg/down/");
    assertEquals(200, partial.statusCode());
    assertTrue(body(partial).contains("down-1.0.tar.gz"), body(partial));
    assertEquals(List.of("199 corral \"member pa failed: 502\""), partial.headers().allValues("Warning"));
    assertEquals(before + 1, memberFailures("pg", "pa"));
  }
}
