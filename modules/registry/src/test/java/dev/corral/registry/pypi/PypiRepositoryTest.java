package dev.corral.registry.pypi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.download.FetchSource;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.Header;
import dev.corral.registry.CachingLookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class PypiRepositoryTest {
  static final String ROOT = "http://127.0.0.1:9/simple/";
  static final String BASE = "http://127.0.0.1:8080/py";
  static final String PIP_ACCEPT =
      "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01";
  static final String SHA_WHL = "a".repeat(64);
  static final String SHA_META = "b".repeat(64);
  static final String SHA_SDIST = "c".repeat(64);

  static final String HTML = """
      <!DOCTYPE html>
      <html><head><meta name="pypi:repository-version" content="1.1"><title>Links for demo-pkg</title></head>
      <body>
      <!-- <a href="http://127.0.0.1:9/commented.whl">not a link</a> -->
      <h1>Links for demo-pkg</h1>
      <A HREF="../../files/demo_pkg-1.0.0-py3-none-any.whl#sha256=%s" data-requires-python="&gt;=3.7"
         data-core-metadata="sha256=%s" data-dist-info-metadata="sha256=%s">demo_pkg-1.0.0-py3-none-any.whl</A><br/>
      <a href='http://127.0.0.2:7/cdn/demo-pkg-1.0.0.tar.gz?x=1&amp;y=2#sha256=%s' data-yanked="">demo-pkg-1.0.0.tar.gz</a>
      <a href=http://127.0.0.2:7/cdn/demo_pkg-0.9-py3-none-any.whl>unquoted, no hash</a>
      <a href="file:///etc/passwd">passwd</a>
      <a href="#">no file</a>
      </body></html>
      """.formatted(SHA_WHL, SHA_META, SHA_META, SHA_SDIST);

  static final String JSON = """
      {"meta":{"api-version":"1.1","_last-serial":3},"name":"demo-pkg","versions":["1.0.0"],
       "files":[
        {"filename":"demo_pkg-1.0.0-py3-none-any.whl","url":"../../files/demo_pkg-1.0.0-py3-none-any.whl",
         "hashes":{"sha256":"%s"},"requires-python":">=3.7","core-metadata":{"sha256":"%s"},
         "dist-info-metadata":{"sha256":"%s"},"yanked":false,"size":1234},
        {"filename":"demo-pkg-1.0.0.tar.gz","url":"http://127.0.0.2:7/cdn/demo-pkg-1.0.0.tar.gz","hashes":{"sha256":"%s"},
         "core-metadata":false}
       ],"url":"http://127.0.0.1:9/not-a-file-url"}
      """.formatted(SHA_WHL, SHA_META, "d".repeat(64), SHA_SDIST);

  final PypiRepository repo = new PypiRepository("py", ROOT);
  final CachingLookup lookup = new CachingLookup();

  Target resolve(String accept, String query, String... segments) {
    RepoRequest r = new RepoRequest(List.of(segments), "/unused", Optional.ofNullable(query),
        Optional.ofNullable(accept), BASE);
    return repo.resolve(r, lookup).toCompletableFuture().join();
  }

  Target.Artifact artifact(String accept, String... segments) {
    return assertInstanceOf(Target.Artifact.class, resolve(accept, null, segments));
  }

  @Test
  void namesAreNormalisedPerPep503() {
    assertEquals(Optional.of("demo-pkg"), PypiRepository.normalize("Demo_Pkg"));
    assertEquals(Optional.of("demo-pkg"), PypiRepository.normalize("demo.pkg"));
    assertEquals(Optional.of("a-b-c"), PypiRepository.normalize("A__b-._C"));
    assertEquals(Optional.empty(), PypiRepository.normalize("-leading"));
    assertEquals(Optional.empty(), PypiRepository.normalize("trailing."));
    assertEquals(Optional.empty(), PypiRepository.normalize("sp ace"));
    assertEquals(Optional.empty(), PypiRepository.normalize("x%2e"));
  }

  @Test
  void projectPageIsMutableUnderTheNormalisedKeyWithVary() {
    Target.Artifact a = artifact(PIP_ACCEPT, "Demo_Pkg");
    assertEquals(new ArtifactKey("py", ROOT + "demo-pkg/", PypiRepository.JSON, null), a.key());
    assertTrue(a.mutable());
    assertEquals(List.of(new Header("Vary", "Accept")), a.headers());
    assertEquals(a.key(), artifact(PIP_ACCEPT, "demo.pkg").key());
    assertEquals(a.key(), artifact(PIP_ACCEPT, "demo-pkg").key());
  }

  @Test
  void variantsByContentNegotiation() {
    assertEquals(PypiRepository.JSON, artifact(PIP_ACCEPT, "p").key().variant());
    assertEquals(PypiRepository.JSON, artifact("application/vnd.pypi.simple.latest+json", "p").key().variant());
    assertEquals(PypiRepository.HTML, artifact("text/html", "p").key().variant());
    assertEquals(PypiRepository.HTML, artifact(null, "p").key().variant());
    assertEquals(PypiRepository.HTML, artifact("*/*", "p").key().variant());
    assertEquals(PypiRepository.HTML, artifact(";;,+json;", "p").key().variant(), "a garbled Accept");
    assertEquals(PypiRepository.HTML,
        artifact("application/vnd.pypi.simple.v1+json; q=0.1, text/html", "p").key().variant());
    Target.Artifact byQuery = assertInstanceOf(Target.Artifact.class,
        resolve("text/html", "format=application%2Fvnd.pypi.simple.v1%2Bjson", "p"));
    assertEquals(PypiRepository.JSON, byQuery.key().variant());
    assertFalse(artifact(PIP_ACCEPT, "p").key().id().equals(artifact("text/html", "p").key().id()));
  }

  @Test
  void htmlPageRewritesFileLinksKeepingFragmentsAndMetadataAttributes() {
    String out = SimpleIndex.rewrite(ByteString.fromString(HTML, StandardCharsets.UTF_8), BASE + "/-/files/demo-pkg")
        .utf8String();
    assertTrue(out.contains("href=\"" + BASE + "/-/files/demo-pkg/demo_pkg-1.0.0-py3-none-any.whl#sha256=" + SHA_WHL
        + "\" data-requires-python=\"&gt;=3.7\""), out);
    assertTrue(out.contains("data-core-metadata=\"sha256=" + SHA_META + "\" data-dist-info-metadata=\"sha256=" + SHA_META),
        out);
    assertTrue(out.contains("href=\"" + BASE + "/-/files/demo-pkg/demo-pkg-1.0.0.tar.gz#sha256=" + SHA_SDIST
        + "\" data-yanked=\"\""), out);
    assertTrue(out.contains("href=\"" + BASE + "/-/files/demo-pkg/demo_pkg-0.9-py3-none-any.whl\">unquoted"), out);
    assertFalse(out.contains("127.0.0.2"), "no upstream file URL left: " + out);
    assertTrue(out.contains("<!-- <a href=\"http://127.0.0.1:9/commented.whl\">not a link</a> -->"), "comments as they were");
    assertTrue(out.contains("<title>Links for demo-pkg</title>"));
    // the rest of the page is byte for byte what it was
    String hrefs = "(?i)href=(\"[^\"]*\"|'[^']*'|[^\\s>]+)";
    assertEquals(HTML.replaceAll(hrefs, "H"), out.replaceAll(hrefs, "H"));
    assertTrue(out.contains("<a href=\"file:///etc/passwd\">passwd</a>"), "only http(s) links are rewritten");
  }

  @Test
  void jsonPageRewritesFileUrlsOnly() throws Exception {
    ByteString out = SimpleIndex.rewrite(ByteString.fromString(JSON, StandardCharsets.UTF_8), BASE + "/-/files/demo-pkg");
    JsonNode doc = new ObjectMapper().readTree(out.toArray());
    JsonNode in = new ObjectMapper().readTree(JSON);
    assertEquals(BASE + "/-/files/demo-pkg/demo_pkg-1.0.0-py3-none-any.whl", doc.at("/files/0/url").asText());
    assertEquals(BASE + "/-/files/demo-pkg/demo-pkg-1.0.0.tar.gz", doc.at("/files/1/url").asText());
    assertEquals("http://127.0.0.1:9/not-a-file-url", doc.get("url").asText());
    ((com.fasterxml.jackson.databind.node.ObjectNode) in.at("/files/0")).remove("url");
    ((com.fasterxml.jackson.databind.node.ObjectNode) in.at("/files/1")).remove("url");
    ((com.fasterxml.jackson.databind.node.ObjectNode) doc.at("/files/0")).remove("url");
    ((com.fasterxml.jackson.databind.node.ObjectNode) doc.at("/files/1")).remove("url");
    assertEquals(in, doc, "hashes, core-metadata and the rest are kept");
  }

  FetchSource source(ArtifactKey key) {
    return repo.source(key, lookup).toCompletableFuture().join();
  }

  @Test
  void fileKeyIsTheSameWhateverPageTheNodeHolds() {
    // K1: a node holding the HTML page (with hashes), one holding the JSON page and one fetching
    // it make the same key for the same file, and that key carries no digest.
    lookup.upstream(repo.pageKey("demo-pkg", PypiRepository.JSON), JSON);
    ArtifactKey fetching = artifact(null, "-", "files", "demo-pkg", "demo_pkg-1.0.0-py3-none-any.whl").key();
    CachingLookup holdingHtml = new CachingLookup().cache(repo.pageKey("demo-pkg", PypiRepository.HTML), HTML);
    ArtifactKey html = assertInstanceOf(Target.Artifact.class, repo.resolve(new RepoRequest(
        List.of("-", "files", "Demo_Pkg", "demo_pkg-1.0.0-py3-none-any.whl"), "/unused", Optional.empty(),
        Optional.empty(), BASE), holdingHtml).toCompletableFuture().join()).key();
    assertEquals(ArtifactKey.of("py", ROOT + "demo-pkg/demo_pkg-1.0.0-py3-none-any.whl"), fetching);
    assertNull(fetching.expected());
    assertEquals(fetching, html);
    assertEquals(fetching.id(), html.id());
  }

  @Test
  void fileResolvesThroughTheCachedPageAndItsSourceCarriesTheHash() {
    lookup.cache(repo.pageKey("demo-pkg", PypiRepository.HTML), HTML);
    Target.Artifact whl = artifact(null, "-", "files", "Demo_Pkg", "demo_pkg-1.0.0-py3-none-any.whl");
    assertFalse(whl.mutable());
    assertTrue(whl.rewrite().isEmpty());
    assertEquals(new FetchSource("http://127.0.0.1:9/files/demo_pkg-1.0.0-py3-none-any.whl",
        new Digest("sha256", SHA_WHL)), source(whl.key()));
    Target.Artifact meta = artifact(null, "-", "files", "demo-pkg", "demo_pkg-1.0.0-py3-none-any.whl.metadata");
    assertEquals(ArtifactKey.of("py", ROOT + "demo-pkg/demo_pkg-1.0.0-py3-none-any.whl.metadata"), meta.key());
    assertEquals(new FetchSource("http://127.0.0.1:9/files/demo_pkg-1.0.0-py3-none-any.whl.metadata",
        new Digest("sha256", SHA_META)), source(meta.key()));
    Target.Artifact sdist = artifact(null, "-", "files", "demo-pkg", "demo-pkg-1.0.0.tar.gz");
    assertEquals(new FetchSource("http://127.0.0.2:7/cdn/demo-pkg-1.0.0.tar.gz?x=1&y=2",
        new Digest("sha256", SHA_SDIST)), source(sdist.key()));
    Target.Artifact noHash = artifact(null, "-", "files", "demo-pkg", "demo_pkg-0.9-py3-none-any.whl");
    assertNull(source(noHash.key()).expected());
    // no metadata attribute, no .metadata; unknown and non-http files: 404
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "files", "demo-pkg", "demo-pkg-1.0.0.tar.gz.metadata"));
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "files", "demo-pkg", "passwd"));
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "files", "demo-pkg", "other-1.0.whl"));
    assertEquals(List.of(repo.pageKey("demo-pkg", PypiRepository.HTML)), lookup.bodyCalls.subList(0, 1),
        "read the form that is cached");
    // a page that no longer lists the file fails the fetch: nothing unnamed is fetched
    lookup.cached.clear();
    lookup.cache(repo.pageKey("demo-pkg", PypiRepository.JSON), "{\"meta\":{\"api-version\":\"1.1\"},\"files\":[]}");
    assertThrows(CompletionException.class, () -> source(whl.key()));
    // any other key, and a key that names its digest: as keyed
    ArtifactKey page = repo.pageKey("demo-pkg", PypiRepository.JSON);
    assertEquals(new FetchSource(page.url(), null), source(page));
    ArtifactKey named = new ArtifactKey("py", whl.key().url(), "", new Digest("sha256", SHA_WHL));
    assertEquals(new FetchSource(named.url(), named.expected()), source(named));
  }

  @Test
  void fileResolvesThroughTheJsonPageFetchingItWhenNothingIsCached() {
    lookup.upstream(repo.pageKey("demo-pkg", PypiRepository.JSON), JSON);
    Target.Artifact whl = artifact(null, "-", "files", "demo-pkg", "demo_pkg-1.0.0-py3-none-any.whl");
    assertEquals(ArtifactKey.of("py", ROOT + "demo-pkg/demo_pkg-1.0.0-py3-none-any.whl"), whl.key());
    assertEquals(List.of(repo.pageKey("demo-pkg", PypiRepository.JSON)), lookup.bodyCalls);
    assertEquals(new FetchSource("http://127.0.0.1:9/files/demo_pkg-1.0.0-py3-none-any.whl",
        new Digest("sha256", SHA_WHL)), source(whl.key()));
    // core-metadata wins over dist-info-metadata (PEP 714)
    assertEquals(new Digest("sha256", SHA_META), source(
        artifact(null, "-", "files", "demo-pkg", "demo_pkg-1.0.0-py3-none-any.whl.metadata").key()).expected());
    assertInstanceOf(Target.NotFound.class,
        resolve(null, null, "-", "files", "demo-pkg", "demo-pkg-1.0.0.tar.gz.metadata"));
    // a project the upstream does not have
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "files", "nope", "nope-1.0.whl"));
  }

  @Test
  void unknownOrHostilePathsAreRejectedOrNotFound() {
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-"));
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "files", "demo-pkg"));
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "demo-pkg", "1.0"));
    assertInstanceOf(Target.NotFound.class, resolve(null, null, "-", "other", "demo-pkg", "x.whl"));
    assertInstanceOf(Target.Rejected.class, resolve(null, null, "bad name"));
    assertInstanceOf(Target.Rejected.class, resolve(null, null, "-", "files", "..x", "x.whl"));
    assertInstanceOf(Target.Rejected.class, resolve(null, null, "-", "files", "demo-pkg", ".hidden"));
    assertTrue(lookup.bodyCalls.isEmpty());
  }

  @Test
  void pageParsingCopesWithBrokenInput() {
    String broken = "<html><a href=\"x-1.0.whl#sha256=" + SHA_WHL + "\">x</a><a href=\"unterminated";
    var files = SimpleIndex.files(ByteString.fromString(broken, StandardCharsets.UTF_8), ROOT + "x/");
    assertEquals(ROOT + "x/x-1.0.whl", files.get("x-1.0.whl").url());
    assertEquals(1, files.size());
    var none = SimpleIndex.files(ByteString.fromString("{\"files\": [ {\"url\": ", StandardCharsets.UTF_8), ROOT);
    assertTrue(none.isEmpty());
    // a <base href> changes what relative links resolve against
    String based = "<base href=\"http://127.0.0.3/pkgs/\"><a href=\"y-1.0.whl\">y</a>";
    assertEquals("http://127.0.0.3/pkgs/y-1.0.whl",
        SimpleIndex.files(ByteString.fromString(based, StandardCharsets.UTF_8), ROOT + "y/").get("y-1.0.whl").url());
    // bad hashes are no hashes
    String badHash = "<a href=\"z-1.0.whl#sha256=xyz\">z</a><a href=\"w-1.0.whl#sha3=" + SHA_WHL + "\">w</a>";
    var bad = SimpleIndex.files(ByteString.fromString(badHash, StandardCharsets.UTF_8), ROOT + "z/");
    assertTrue(bad.get("z-1.0.whl").expected().isEmpty());
    assertTrue(bad.get("w-1.0.whl").expected().isEmpty());
  }
}
