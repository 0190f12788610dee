package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The oci repository type over real HTTP against a fake registry (issue 15): the API's version
 * check, blobs and manifests by digest verified and kept, manifests by tag negotiated by
 * {@code Accept} into variants, tags lists, bad names and digests refused before any upstream
 * request, and a read-only mirror's answer to pushes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OciHttpTest {
  static final String OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
  static final String OCI_INDEX = "application/vnd.oci.image.index.v1+json";
  static final String DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";
  static final String DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";

  record Doc(String type, byte[] body) {}

  /** Upstream path -> document; a manifest path may hold one document per media type. */
  private final Map<String, List<Doc>> docs = new ConcurrentHashMap<>();
  /** Upstream path -> where the registry redirects it (object storage on another host). */
  private final Map<String, String> redirects = new ConcurrentHashMap<>();
  /** The object storage: another host (127.0.0.2), which records the Authorization it is sent. */
  private final Map<String, byte[]> stored = new ConcurrentHashMap<>();
  private final List<String> storageAuthorization = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final HttpServer storage = storage();

  private HttpServer storage() {
    try {
      HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getByName("127.0.0.2"), 0), 16);
      server.createContext("/", exchange -> {
        try (exchange) {
          storageAuthorization.add(String.valueOf(exchange.getRequestHeaders().getFirst("Authorization")));
          byte[] body = stored.get(exchange.getRequestURI().getPath());
          exchange.getResponseHeaders().add("Content-Type", "application/octet-stream");
          exchange.sendResponseHeaders(body == null ? 404 : 200, body == null ? -1 : body.length);
          if (body != null) {
            exchange.getResponseBody().write(body);
          }
        }
      });
      server.start();
      return server;
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @AfterAll
  void stopStorage() {
    storage.stop(0);
  }

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().otherwise(this::answer).config(n -> """
      corral.repos {
        images { type = oci, url = "%s", retries = 0 }
        secured { type = oci, url = "%s", retries = 0, allowed-hosts = ["127.0.0.2:%d"],
          credentials { type = basic, username = mirror, password-file = "%s" } }
        hub { type = oci, url = "%s", retries = 0, single-name-namespace = library, root-mirror = true }
        files { type = generic, url = "%s", retries = 0 }
      }
      """.formatted(n.url("/"), n.url("/"), storage.getAddress().getPort(), password(n.dir()), n.url("/"),
      n.url("/files/")));

  private static String password(java.nio.file.Path dir) throws java.io.IOException {
    java.nio.file.Path file = dir.resolve("registry-password");
    java.nio.file.Files.writeString(file, "s3cret-pw\n");
    return file.toString();
  }

  /** A registry: the first stored document whose type the request's Accept names (any for blobs). */
  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getRawPath()
        + (exchange.getRequestURI().getRawQuery() == null ? "" : "?" + exchange.getRequestURI().getRawQuery());
    String to = redirects.get(path);
    if (to != null) {
      exchange.getResponseHeaders().add("Location", to);
      FakeUpstream.send(exchange, 307, new byte[0]);
      return;
    }
    List<Doc> forms = docs.get(path);
    String accept = exchange.getRequestHeaders().getFirst("Accept");
    Doc chosen = null;
    for (Doc d : forms == null ? List.<Doc>of() : forms) {
      if (!path.contains("/manifests/") || (accept != null && accept.contains(d.type()))) {
        chosen = d;
        break;
      }
    }
    if (chosen == null) {
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      FakeUpstream.send(exchange, 404, "{\"errors\":[{\"code\":\"MANIFEST_UNKNOWN\"}]}".getBytes(StandardCharsets.UTF_8));
      return;
    }
    exchange.getResponseHeaders().add("Content-Type", chosen.type());
    exchange.getResponseHeaders().add("Docker-Content-Digest", digest(chosen.body()));
    FakeUpstream.send(exchange, 200, chosen.body());
  }

  static String digest(byte[] body) throws Exception {
    return "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(body));
  }

  private HttpResponse<byte[]> send(String method, String target, String... headers) throws Exception {
    HttpRequest.Builder b = TestNode.request(node.server(), target)
        .method(method, HttpRequest.BodyPublishers.noBody());
    for (int i = 0; i < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    return node.client().send(b.build(), HttpResponse.BodyHandlers.ofByteArray());
  }

  private int upstreamRequests(String path) {
    return node.upstream().requests(path);
  }

  @Test
  void theVersionCheckSaysTheApiIsSpokenHere() {
    for (String target : List.of("/v2/", "/v2")) {
      HttpResponse<byte[]> r = node.get(target);
      assertEquals(200, r.statusCode(), target);
      assertEquals("registry/2.0", r.headers().firstValue("Docker-Distribution-API-Version").orElse(null));
    }
  }

  @Test
  void aBlobIsVerifiedKeptAndServedWithItsDigest() throws Exception {
    byte[] layer = TestNode.bytes(300_000, 15);
    String d = digest(layer);
    docs.put("/v2/team/app/blobs/" + d, List.of(new Doc("application/octet-stream", layer)));
    HttpResponse<byte[]> first = node.get("/v2/images/team/app/blobs/" + d);
    assertEquals(200, first.statusCode());
    assertEquals("MISS", xCache(first));
    assertArrayEquals(layer, first.body());
    assertEquals(d, first.headers().firstValue("Docker-Content-Digest").orElse(null));
    assertEquals("registry/2.0", first.headers().firstValue("Docker-Distribution-API-Version").orElse(null));
    HttpResponse<byte[]> again = node.get("/v2/images/team/app/blobs/" + d);
    assertEquals("HIT", xCache(again));
    assertArrayEquals(layer, again.body());
    assertEquals(d, again.headers().firstValue("Docker-Content-Digest").orElse(null));
    HttpResponse<byte[]> head = send("HEAD", "/v2/images/team/app/blobs/" + d);
    assertEquals(200, head.statusCode());
    assertEquals(String.valueOf(layer.length), head.headers().firstValue("Content-Length").orElse(null));
    assertEquals(1, upstreamRequests("/v2/team/app/blobs/" + d));
  }

  @Test
  void aBlobRedirectedToObjectStorageOnAnotherHostIsFollowedWithoutTheCredential() throws Exception {
    byte[] layer = TestNode.bytes(40_000, 21);
    String d = digest(layer);
    String hex = d.substring("sha256:".length());
    stored.put("/bucket/" + hex, layer);
    String storageBase = "http://127.0.0.2:" + storage.getAddress().getPort();
    redirects.put("/v2/team/private/blobs/" + d, storageBase + "/bucket/" + hex + "?X-Signature=abc");
    HttpResponse<byte[]> r = node.get("/v2/secured/team/private/blobs/" + d);
    assertEquals(200, r.statusCode());
    assertEquals("MISS", xCache(r));
    assertArrayEquals(layer, r.body());
    // The registry got the repository's credential; the other host never does.
    assertEquals("Basic " + java.util.Base64.getEncoder().encodeToString("mirror:s3cret-pw".getBytes(StandardCharsets.UTF_8)),
        node.upstream().last().header("Authorization"));
    assertEquals(List.of("null"), storageAuthorization);
    String metrics = new String(node.get("/-/metrics").body(), StandardCharsets.UTF_8);
    assertTrue(metrics.contains("corral_upstream_requests_total{repo=\"secured\",status=\"307\"} 1.0"), metrics);
    // A redirect to a host the repository does not allow is refused.
    byte[] other = TestNode.bytes(1000, 22);
    redirects.put("/v2/team/private/blobs/" + digest(other), "http://127.0.0.3:" + storage.getAddress().getPort() + "/bucket/x");
    assertEquals(502, node.get("/v2/secured/team/private/blobs/" + digest(other)).statusCode());
  }

  @Test
  void aBlobWhoseBytesDoNotMatchItsDigestIsRefusedAndNotKept() throws Exception {
    byte[] layer = TestNode.bytes(5000, 16);
    String d = digest(layer);
    byte[] flipped = layer.clone();
    flipped[100] ^= 1;
    docs.put("/v2/team/app/blobs/" + d, List.of(new Doc("application/octet-stream", flipped)));
    assertEquals(502, node.get("/v2/images/team/app/blobs/" + d).statusCode());
    assertEquals(502, node.get("/v2/images/team/app/blobs/" + d).statusCode()); // nothing was kept
    docs.put("/v2/team/app/blobs/" + d, List.of(new Doc("application/octet-stream", layer)));
    HttpResponse<byte[]> healed = node.get("/v2/images/team/app/blobs/" + d);
    assertEquals(200, healed.statusCode());
    assertEquals("MISS", xCache(healed));
    assertArrayEquals(layer, healed.body());
  }

  @Test
  void aManifestByTagIsNegotiatedByAcceptIntoVariants() throws Exception {
    byte[] oci = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\"}".getBytes(StandardCharsets.UTF_8);
    byte[] docker = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker.distribution.manifest.v2+json\"}".getBytes(StandardCharsets.UTF_8);
    String path = "/v2/team/web/manifests/1.0";
    docs.put(path, List.of(new Doc(OCI_MANIFEST, oci), new Doc(DOCKER_MANIFEST, docker)));

    HttpResponse<byte[]> ociFirst = node.get("/v2/images/team/web/manifests/1.0", "Accept", OCI_MANIFEST + ", " + OCI_INDEX);
    assertEquals(200, ociFirst.statusCode());
    assertEquals("MISS", xCache(ociFirst));
    assertArrayEquals(oci, ociFirst.body());
    assertEquals(OCI_MANIFEST, ociFirst.headers().firstValue("Content-Type").orElse(null));
    assertEquals(digest(oci), ociFirst.headers().firstValue("Docker-Content-Digest").orElse(null));
    assertTrue(ociFirst.headers().allValues("Vary").contains("Accept"), ociFirst.headers().toString());
    // Sent upstream: the accepted types in Corral's order, whatever the client's spelling.
    assertEquals(OCI_INDEX + ", " + OCI_MANIFEST, node.upstream().last().header("Accept"));

    // The same set in another order and with parameters is the same variant: a hit.
    HttpResponse<byte[]> ociAgain = node.get("/v2/images/team/web/manifests/1.0", "Accept", OCI_INDEX + "; q=0.9, " + OCI_MANIFEST);
    assertEquals("HIT", xCache(ociAgain));
    assertArrayEquals(oci, ociAgain.body());

    // Accept as several header lines (as Go clients send it) is the same set: a hit.
    HttpResponse<byte[]> lines = node.get("/v2/images/team/web/manifests/1.0", "Accept", OCI_MANIFEST, "Accept", OCI_INDEX);
    assertEquals("HIT", xCache(lines));

    // A client that accepts only the Docker type is another key and gets the Docker form.
    HttpResponse<byte[]> dockerOnly = node.get("/v2/images/team/web/manifests/1.0", "Accept", DOCKER_MANIFEST);
    assertEquals("MISS", xCache(dockerOnly));
    assertArrayEquals(docker, dockerOnly.body());
    assertEquals(DOCKER_MANIFEST, dockerOnly.headers().firstValue("Content-Type").orElse(null));
    assertEquals(2, upstreamRequests(path));
  }

  @Test
  void aManifestByDigestIsImmutableAndAskedAcceptingEveryType() throws Exception {
    byte[] index = "{\"schemaVersion\":2,\"manifests\":[]}".getBytes(StandardCharsets.UTF_8);
    String d = digest(index);
    docs.put("/v2/team/multi/manifests/" + d, List.of(new Doc(OCI_INDEX, index)));
    HttpResponse<byte[]> first = node.get("/v2/images/team/multi/manifests/" + d, "Accept", OCI_INDEX);
    assertEquals(200, first.statusCode());
    assertArrayEquals(index, first.body());
    assertEquals(d, first.headers().firstValue("Docker-Content-Digest").orElse(null));
    String sent = node.upstream().last().header("Accept");
    for (String type : List.of(OCI_INDEX, OCI_MANIFEST, DOCKER_LIST, DOCKER_MANIFEST)) {
      assertTrue(sent.contains(type), sent);
    }
    // By digest the bytes are fixed: any client's Accept gets the same key.
    HttpResponse<byte[]> other = node.get("/v2/images/team/multi/manifests/" + d, "Accept", DOCKER_MANIFEST);
    assertEquals("HIT", xCache(other));
    assertEquals(1, upstreamRequests("/v2/team/multi/manifests/" + d));
  }

  @Test
  void aOnePartNameIsAskedInTheConfiguredNamespace() throws Exception {
    byte[] m = "{\"schemaVersion\":2}".getBytes(StandardCharsets.UTF_8);
    docs.put("/v2/library/tool/manifests/3", List.of(new Doc(OCI_MANIFEST, m)));
    HttpResponse<byte[]> shortName = node.get("/v2/hub/tool/manifests/3", "Accept", OCI_MANIFEST);
    assertEquals(200, shortName.statusCode());
    assertEquals("MISS", xCache(shortName));
    HttpResponse<byte[]> longName = node.get("/v2/hub/library/tool/manifests/3", "Accept", OCI_MANIFEST);
    assertEquals("HIT", xCache(longName));
    assertEquals(1, upstreamRequests("/v2/library/tool/manifests/3"));
    assertEquals(404, node.get("/v2/images/tool/manifests/3", "Accept", OCI_MANIFEST).statusCode());
  }

  @Test
  void theRootMirrorServesImagePathsThatNameNoRepository() throws Exception {
    byte[] m = "{\"schemaVersion\":2,\"root\":1}".getBytes(StandardCharsets.UTF_8);
    docs.put("/v2/library/rooted/manifests/1", List.of(new Doc(OCI_MANIFEST, m)));
    // As the Docker daemon asks a mirror given as a bare host: no repository name in the path.
    HttpResponse<byte[]> r = node.get("/v2/library/rooted/manifests/1", "Accept", OCI_MANIFEST);
    assertEquals(200, r.statusCode());
    assertArrayEquals(m, r.body());
    assertEquals("HIT", xCache(node.get("/v2/hub/library/rooted/manifests/1", "Accept", OCI_MANIFEST)));
    assertEquals(1, upstreamRequests("/v2/library/rooted/manifests/1"));
    // A first segment that names a repository is that repository, never the root mirror's image.
    assertEquals(404, node.get("/v2/files/rooted/manifests/1").statusCode());
  }

  @Test
  void aTagsListKeepsOnlyItsPagingParameters() throws Exception {
    byte[] list = "{\"name\":\"team/app\",\"tags\":[\"1\",\"2\"]}".getBytes(StandardCharsets.UTF_8);
    docs.put("/v2/team/app/tags/list?n=2&last=1", List.of(new Doc("application/json", list)));
    HttpResponse<byte[]> r = node.get("/v2/images/team/app/tags/list?last=1&n=2");
    assertEquals(200, r.statusCode());
    assertArrayEquals(list, r.body());
    assertEquals(400, node.get("/v2/images/team/app/tags/list?n=2&x=1").statusCode());
  }

  @Test
  void malformedNamesTagsAndDigestsAreRefusedBeforeAnyUpstreamRequest() throws Exception {
    int before = node.upstream().requests();
    for (String target : List.of(
        "/v2/images/Team/app/manifests/latest", // upper case in a name
        "/v2/images/team/app/manifests/sha256:abc", // too short a digest
        "/v2/images/team/app/manifests/md5:0123456789abcdef0123456789abcdef", // not a registry digest
        "/v2/images/team/app/blobs/latest", // a blob by tag
        "/v2/images/team/app/manifests/-bad", // a tag may not start with '-'
        "/v2/images/team//app/manifests/latest",
        "/v2/images/team/app/blobs/sha256:" + "a".repeat(64) + "?x=1")) {
      assertEquals(400, node.get(target).statusCode(), target);
    }
    assertEquals(404, node.get("/v2/images/team/app/uploads/").statusCode());
    assertEquals(before, node.upstream().requests());
    // Errors come in the API's own form, which container clients show their users.
    assertRegistryError(node.get("/v2/images/team/app/manifests/sha256:abc"), 400, "DIGEST_INVALID", "digest");
    assertRegistryError(node.get("/v2/images/Team/app/manifests/latest"), 400, "NAME_INVALID", "image name");
    assertRegistryError(node.get("/v2/images/team/app/manifests/-bad"), 400, "TAG_INVALID", "not a tag");
  }

  @Test
  void anUnknownManifestOrBlobIsTheApisNotFound() throws Exception {
    HttpResponse<byte[]> manifest = node.get("/v2/images/team/none/manifests/9", "Accept", OCI_MANIFEST);
    assertRegistryError(manifest, 404, "MANIFEST_UNKNOWN", "not found upstream");
    assertEquals("registry/2.0", manifest.headers().firstValue("Docker-Distribution-API-Version").orElse(null));
    assertRegistryError(node.get("/v2/images/team/none/blobs/sha256:" + "b".repeat(64)), 404, "BLOB_UNKNOWN", "not found");
  }

  static void assertRegistryError(HttpResponse<byte[]> r, int status, String code, String inMessage) throws Exception {
    assertEquals(status, r.statusCode());
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(null));
    com.fasterxml.jackson.databind.JsonNode error = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(r.body()).path("errors").path(0);
    assertEquals(code, error.path("code").asText(), new String(r.body(), StandardCharsets.UTF_8));
    assertTrue(error.path("message").asText().contains(inMessage), error.toString());
  }

  @Test
  void pushesDeletesAndUploadsGetTheReadOnlyAnswer() throws Exception {
    for (String method : List.of("PUT", "POST", "PATCH", "DELETE")) {
      HttpResponse<byte[]> r = send(method, "/v2/images/team/app/blobs/uploads/");
      assertRegistryError(r, 405, "UNSUPPORTED", "read-only mirror");
      assertTrue(new String(r.body(), StandardCharsets.UTF_8).contains("read-only mirror"), method);
      assertEquals("GET, HEAD", r.headers().firstValue("Allow").orElse(null));
    }
  }

  @Test
  void anOciRepositoryIsOnlyUnderV2AndOnlyOciRepositoriesAre() {
    HttpResponse<byte[]> direct = node.get("/images/team/app/manifests/latest");
    assertEquals(404, direct.statusCode());
    assertTrue(new String(direct.body(), StandardCharsets.UTF_8).contains("/v2/images/"));
    assertEquals(404, node.get("/v2/files/team/app/manifests/latest").statusCode());
    assertEquals(404, node.get("/images/team/app/blobs/sha256:" + "a".repeat(64)).statusCode());
  }
}
