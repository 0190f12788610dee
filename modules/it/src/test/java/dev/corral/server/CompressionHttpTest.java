package dev.corral.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.zip.GZIPInputStream;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * gzip over real HTTP: metadata (an npm packument, PyPI pages, {@code maven-metadata.xml}, Go's
 * {@code @v/list}) is sent gzip-encoded to a client that takes it, decoding to exactly the
 * identity body, with {@code Vary: Accept-Encoding} on both forms and an ETag of its own that
 * conditional requests match; the gzip form is made once; artifacts are never encoded; a
 * {@code Range} or {@code gzip;q=0} gets identity.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CompressionHttpTest {
  record Doc(String type, byte[] body, String etag) {}

  private final Map<String, Doc> docs = new ConcurrentHashMap<>();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().otherwise(this::answer).config(n -> """
      corral.repos {
        npm { type = npm, url = "%s", retries = 0 }
        py { type = pypi, url = "%s", retries = 0 }
      }
      """.formatted(n.url("/registry/"), n.url("/simple/")))
      .args(n -> new String[] {"--repo", "m2=maven:" + n.url("/m/"), "--repo", "go=go:" + n.url("/g"),
          "--repo", "files=generic:" + n.url("/files/")});

  private void answer(HttpExchange exchange, int nth) throws IOException {
    Doc d = docs.get(exchange.getRequestURI().getPath());
    if (d == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.getResponseHeaders().add("Content-Type", d.type());
    if (d.etag() != null) {
      exchange.getResponseHeaders().add("ETag", d.etag());
    }
    FakeUpstream.send(exchange, 200, d.body());
  }

  private HttpResponse<byte[]> get(String target, String... headers) {
    return node.get(target, headers);
  }

  private static String header(HttpResponse<?> r, String name) {
    return r.headers().firstValue(name).orElse(null);
  }

  private static boolean varies(HttpResponse<?> r) {
    return r.headers().allValues("Vary").stream().anyMatch(v -> v.contains("Accept-Encoding"));
  }

  private static byte[] gunzip(byte[] body) throws IOException {
    try (GZIPInputStream in = new GZIPInputStream(new ByteArrayInputStream(body))) {
      return in.readAllBytes();
    }
  }

  /** A packument long enough that gzip pays, naming a tarball the upstream serves. */
  private byte[] publish(String name, byte[] tgz) throws Exception {
    docs.put("/registry/" + name + "/-/" + name + "-1.0.0.tgz", new Doc("application/octet-stream", tgz, null));
    StringBuilder readme = new StringBuilder();
    for (int i = 0; i < 200; i++) {
      readme.append("line ").append(i).append(" of a readme that repeats itself. ");
    }
    String json = """
        {"name":"%s","readme":"%s","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"%s","version":"1.0.0",
         "dist":{"tarball":"%s","integrity":"sha512-%s"}}}}
        """.formatted(name, readme, name, node.url("/registry/" + name + "/-/" + name + "-1.0.0.tgz"),
        Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(tgz)));
    docs.put("/registry/" + name, new Doc("application/json", json.getBytes(UTF_8), null));
    return json.getBytes(UTF_8);
  }

  @Test
  void aPackumentIsSentGzippedToAClientThatTakesItDecodingToTheIdentityBody() throws Exception {
    publish("alpha", TestNode.bytes(4000, 1));

    HttpResponse<byte[]> gz = get("/npm/alpha", "Accept", "application/json", "Accept-Encoding", "gzip, deflate");
    assertEquals(200, gz.statusCode());
    assertEquals("MISS", TestNode.xCache(gz));
    assertEquals("gzip", header(gz, "Content-Encoding"));
    assertEquals(List.of("Accept, Accept-Encoding"), gz.headers().allValues("Vary"), "one line with the repository's own");

    HttpResponse<byte[]> identity = get("/npm/alpha", "Accept", "application/json");
    assertEquals(200, identity.statusCode());
    assertEquals("HIT", TestNode.xCache(identity));
    assertEquals(null, header(identity, "Content-Encoding"));
    assertTrue(varies(identity), "the identity answer varies by Accept-Encoding too");
    assertArrayEquals(identity.body(), gunzip(gz.body()), "the gzip form decodes to exactly the identity body");
    assertTrue(gz.body().length < identity.body().length / 4, gz.body().length + " of " + identity.body().length);
    assertTrue(new String(identity.body(), UTF_8).contains(node.base() + "/npm/alpha/-/alpha-1.0.0.tgz"),
        "the rewritten body is the one compressed");

    String etag = header(identity, "ETag");
    String gzEtag = header(gz, "ETag");
    assertNotEquals(etag, gzEtag);
    assertEquals(etag.substring(0, etag.length() - 1) + "-gzip\"", gzEtag);

    HttpResponse<byte[]> again = get("/npm/alpha", "Accept", "application/json", "Accept-Encoding", "gzip");
    assertEquals("HIT", TestNode.xCache(again));
    assertArrayEquals(gz.body(), again.body());
    assertEquals(gzEtag, header(again, "ETag"));

    HttpResponse<byte[]> notModified = get("/npm/alpha", "Accept", "application/json", "Accept-Encoding", "gzip",
        "If-None-Match", gzEtag);
    assertEquals(304, notModified.statusCode());
    assertEquals(gzEtag, header(notModified, "ETag"));
    assertTrue(varies(notModified));
    assertEquals(304, get("/npm/alpha", "Accept", "application/json", "If-None-Match", etag).statusCode(),
        "the identity form's own ETag still matches it");
    HttpResponse<byte[]> otherForm = get("/npm/alpha", "Accept", "application/json", "If-None-Match", gzEtag);
    assertEquals(200, otherForm.statusCode(), "the gzip form's ETag does not match the identity form");
    assertArrayEquals(identity.body(), otherForm.body());
  }

  @Test
  void refusedGzipAndRangesGetIdentity() throws Exception {
    publish("beta", TestNode.bytes(3000, 2));
    byte[] identity = get("/npm/beta", "Accept", "application/json").body();

    for (String refusal : List.of("gzip;q=0", "*;q=0", "gzip;q=0.5, identity", "br, deflate", "")) {
      HttpResponse<byte[]> r = get("/npm/beta", "Accept", "application/json", "Accept-Encoding", refusal);
      assertEquals(200, r.statusCode(), refusal);
      assertEquals(null, header(r, "Content-Encoding"), refusal);
      assertArrayEquals(identity, r.body(), refusal);
    }
    assertEquals("gzip", header(get("/npm/beta", "Accept", "application/json", "Accept-Encoding", "identity;q=0, gzip"),
        "Content-Encoding"));

    HttpResponse<byte[]> range = get("/npm/beta", "Accept", "application/json", "Accept-Encoding", "gzip",
        "Range", "bytes=0-9");
    assertEquals(206, range.statusCode());
    assertEquals(null, header(range, "Content-Encoding"), "a range is of the identity bytes");
    assertArrayEquals(java.util.Arrays.copyOf(identity, 10), range.body());
  }

  @Test
  void artifactsAreNeverEncoded() throws Exception {
    byte[] tgz = "a tarball that would compress well ".repeat(100).getBytes(UTF_8);
    publish("gamma", tgz);
    get("/npm/gamma", "Accept", "application/json");
    for (int i = 0; i < 2; i++) { // the miss, then the hit
      HttpResponse<byte[]> t = get("/npm/gamma/-/gamma-1.0.0.tgz", "Accept-Encoding", "gzip");
      assertEquals(200, t.statusCode());
      assertEquals(null, header(t, "Content-Encoding"));
      assertFalse(varies(t));
      assertArrayEquals(tgz, t.body());
    }
    byte[] text = "plain text in a generic repository ".repeat(100).getBytes(UTF_8);
    docs.put("/files/readme.txt", new Doc("text/plain", text, null));
    for (int i = 0; i < 2; i++) {
      HttpResponse<byte[]> f = get("/files/readme.txt", "Accept-Encoding", "gzip");
      assertEquals(null, header(f, "Content-Encoding"));
      assertArrayEquals(text, f.body());
    }
  }

  @Test
  void theGzipFormIsMadeOnceAndSharedByEveryRequest() throws Exception {
    publish("delta", TestNode.bytes(2000, 3));
    HttpRequest ask = HttpRequest.GET("/npm/delta").addHeader(RawHeader.create("Accept", "application/json"))
        .addHeader(RawHeader.create("Accept-Encoding", "gzip"));
    HttpEntity.Strict first = (HttpEntity.Strict) handle(ask).entity();
    HttpEntity.Strict second = (HttpEntity.Strict) handle(ask).entity();
    assertSame(first.getData(), second.getData(), "the same remembered bytes, not encoded again");
    assertTrue(gunzip(first.getData().toArray()).length > first.getData().length());
  }

  private org.apache.pekko.http.javadsl.model.HttpResponse handle(HttpRequest request) throws Exception {
    org.apache.pekko.http.javadsl.model.HttpResponse r =
        node.server().frontDoor().handle(request).toCompletableFuture().get(20, TimeUnit.SECONDS);
    assertEquals(200, r.status().intValue());
    assertEquals("gzip", r.getHeader("Content-Encoding").map(h -> h.value()).orElse(null));
    return r;
  }

  @Test
  void pypiPagesAreSentGzippedInBothForms() throws Exception {
    byte[] wheel = TestNode.bytes(1000, 4);
    String file = "eps-1.0.0-py3-none-any.whl";
    String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(wheel));
    docs.put("/files/" + file, new Doc("application/octet-stream", wheel, null));
    String json = """
        {"meta":{"api-version":"1.0"},"name":"eps","files":[{"filename":"%s","url":"../../files/%s",
         "hashes":{"sha256":"%s"}}]}
        """.formatted(file, file, sha);
    docs.put("/simple/eps/", new Doc("application/vnd.pypi.simple.v1+json", json.getBytes(UTF_8), null));
    String html = "<!DOCTYPE html><html><body><a href=\"" + node.url("/files/" + file) + "#sha256=" + sha + "\">"
        + file + "</a></body></html>";
    docs.put("/simple/html-eps/", new Doc("text/html", html.getBytes(UTF_8), null));

    for (String[] page : new String[][] {{"/py/eps/", "application/vnd.pypi.simple.v1+json"}, {"/py/html-eps/", "text/html"}}) {
      HttpResponse<byte[]> gz = get(page[0], "Accept", page[1], "Accept-Encoding", "gzip");
      HttpResponse<byte[]> identity = get(page[0], "Accept", page[1]);
      assertEquals("gzip", header(gz, "Content-Encoding"), page[0]);
      assertTrue(varies(gz) && varies(identity), page[0]);
      assertArrayEquals(identity.body(), gunzip(gz.body()), page[0]);
      assertTrue(new String(identity.body(), UTF_8).contains(node.base() + "/py/-/files/"), page[0]);
    }
    HttpResponse<byte[]> w = get("/py/-/files/eps/" + file, "Accept-Encoding", "gzip");
    assertEquals(null, header(w, "Content-Encoding"), "a wheel is sent as it is");
    assertArrayEquals(wheel, w.body());
  }

  @Test
  void mavenMetadataAndGoVersionListsAreSentGzippedWithTheUpstreamsEtagMarked() throws Exception {
    String versions = "<version>1.0.%d</version>";
    StringBuilder xml = new StringBuilder("<metadata><versioning><versions>");
    for (int i = 0; i < 100; i++) {
      xml.append(versions.formatted(i));
    }
    byte[] meta = xml.append("</versions></versioning></metadata>").toString().getBytes(UTF_8);
    docs.put("/m/com/example/zip/maven-metadata.xml", new Doc("text/xml", meta, "\"up-1\""));

    HttpResponse<byte[]> gz = get("/m2/com/example/zip/maven-metadata.xml", "Accept-Encoding", "gzip");
    assertEquals(200, gz.statusCode());
    assertEquals("MISS", TestNode.xCache(gz), "the request that fetched it gets the gzip form too");
    assertEquals("gzip", header(gz, "Content-Encoding"));
    assertEquals("\"up-1-gzip\"", header(gz, "ETag"));
    assertTrue(varies(gz));
    assertArrayEquals(meta, gunzip(gz.body()));

    HttpResponse<byte[]> hit = get("/m2/com/example/zip/maven-metadata.xml", "Accept-Encoding", "gzip");
    assertEquals("HIT", TestNode.xCache(hit));
    assertArrayEquals(gz.body(), hit.body());
    HttpResponse<byte[]> identity = get("/m2/com/example/zip/maven-metadata.xml");
    assertArrayEquals(meta, identity.body());
    assertEquals("\"up-1\"", header(identity, "ETag"));
    assertTrue(varies(identity));
    assertEquals(304, get("/m2/com/example/zip/maven-metadata.xml", "Accept-Encoding", "gzip",
        "If-None-Match", "\"up-1-gzip\"").statusCode());
    HttpResponse<byte[]> sha1 = get("/m2/com/example/zip/maven-metadata.xml.sha1", "Accept-Encoding", "gzip");
    assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(meta)),
        new String(sha1.body(), UTF_8).trim(), "the checksum is of the identity bytes");

    byte[] jar = "a jar that would compress well ".repeat(100).getBytes(UTF_8);
    docs.put("/m/com/example/zip/1.0.0/zip-1.0.0.jar", new Doc("application/java-archive", jar, null));
    docs.put("/m/com/example/zip/1.0.0/zip-1.0.0.jar.sha1",
        new Doc("text/plain", HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(jar)).getBytes(UTF_8), null));
    HttpResponse<byte[]> j = get("/m2/com/example/zip/1.0.0/zip-1.0.0.jar", "Accept-Encoding", "gzip");
    assertEquals(200, j.statusCode());
    assertEquals(null, header(j, "Content-Encoding"), "a jar is sent as it is");
    assertArrayEquals(jar, j.body());

    StringBuilder list = new StringBuilder();
    for (int i = 0; i < 100; i++) {
      list.append("v1.0.").append(i).append('\n');
    }
    docs.put("/g/example.com/mod/@v/list", new Doc("text/plain; charset=utf-8", list.toString().getBytes(UTF_8), null));
    HttpResponse<byte[]> golist = get("/go/example.com/mod/@v/list", "Accept-Encoding", "gzip");
    assertEquals(200, golist.statusCode());
    assertEquals("gzip", header(golist, "Content-Encoding"));
    assertArrayEquals(list.toString().getBytes(UTF_8), gunzip(golist.body()));
    String goEtag = header(golist, "ETag");
    assertTrue(goEtag != null && goEtag.endsWith("-gzip\""), "no upstream ETag: one from the digest, " + goEtag);
    assertEquals(304, get("/go/example.com/mod/@v/list", "Accept-Encoding", "gzip", "If-None-Match", goEtag).statusCode());
  }
}
