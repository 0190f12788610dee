package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12, item 2: upstream requests confined to what is configured. One real node with an
 * upstream fixture and a second fixture on another loopback port standing for a host nobody
 * configured. Before the fix each upstream-controlled URL naming that other origin (a generic
 * upstream's redirect, in any spelling of the address; an npm {@code dist.tarball}; a PyPI
 * {@code href}, or one climbing out of the index's base path with {@code ../}) was fetched
 * ({@code MISS}) and then served ({@code HIT}) to everyone. Now each is refused before any
 * connection with a 502 naming no address and no query, nothing is stored, and the same URLs work
 * for a repository that lists the other host in {@code allowed-hosts}.
 */
class UpstreamConfinementIT {
  private static final String SIGNATURE = "X-Amz-Signature=s3cr3tsig";

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private FixtureRegistry up;
  private FixtureRegistry other;
  private CorralProcess node;
  private String base;
  private int otherPort;

  @BeforeEach
  void start() throws IOException {
    Files.createDirectories(temp.resolve("up"));
    Files.createDirectories(temp.resolve("other"));
    other = new FixtureRegistry(temp.resolve("other"));
    otherPort = java.net.URI.create(other.url()).getPort();
    write(other.root(), "file.bin", "from a host nobody configured");
    write(other.root(), "evil/-/evil-1.0.0.tgz", "tarball from a host nobody configured");
    write(other.root(), "files/evil-1.0.tar.gz", "sdist from a host nobody configured");

    up = new FixtureRegistry(temp.resolve("up"));
    String elsewhere = "http://127.0.0.1:" + otherPort;
    up.route(r -> switch (r.path()) {
      case "/gen/to-other" -> redirect(elsewhere + "/file.bin");
      case "/gen/to-decimal" -> redirect("http://2130706433:" + otherPort + "/file.bin");
      case "/gen/to-mapped" -> redirect("http://[::ffff:127.0.0.1]:" + otherPort + "/file.bin");
      case "/private/file" -> redirect("/public/file");
      case "/npm/evil" -> Optional.of(FixtureRegistry.Answer.of(200, "application/json", ("{\"name\":\"evil\","
          + "\"versions\":{\"1.0.0\":{\"name\":\"evil\",\"version\":\"1.0.0\",\"dist\":{\"tarball\":\""
          + elsewhere + "/evil/-/evil-1.0.0.tgz\"}}}}").getBytes(UTF_8)));
      case "/pypi/simple/evil/" -> Optional.of(FixtureRegistry.Answer.of(200, "text/html", ("<html><body>"
          + "<a href=\"" + elsewhere + "/files/evil-1.0.tar.gz\">evil-1.0.tar.gz</a>"
          + "<a href=\"../../../outside/evil-1.0-py3-none-any.whl\">evil-1.0-py3-none-any.whl</a>"
          + "<a href=\"../../packages/evil-1.0.zip\">evil-1.0.zip</a>"
          + "</body></html>").getBytes(UTF_8)));
      default -> Optional.empty();
    });
    write(up.root(), "public/file", "public, outside the repository's base path");
    write(up.root(), "outside/evil-1.0-py3-none-any.whl", "wheel outside the index's base path");
    write(up.root(), "pypi/packages/evil-1.0.zip", "a file beside the index, as a proxy repository lays them out");
    Path token = temp.resolve("token");
    Files.writeString(token, "upstream-token\n");

    String u = up.url();
    String listed = "allowed-hosts = [\"127.0.0.1:" + otherPort + "\"]";
    Path conf = temp.resolve("corral.conf");
    Files.writeString(conf, "corral.repos {\n"
        + "  gen { type = generic, url = \"" + u + "/gen/\" }\n"
        + "  genlisted { type = generic, url = \"" + u + "/gen/\", " + listed + " }\n"
        + "  private { type = generic, url = \"" + u + "/private/\", credentials { type = bearer, token-file = \""
        + token.toString().replace("\\", "\\\\") + "\" } }\n"
        + "  npm { type = npm, url = \"" + u + "/npm\" }\n"
        + "  npmlisted { type = npm, url = \"" + u + "/npm\", " + listed + " }\n"
        + "  py { type = pypi, url = \"" + u + "/pypi/simple/\" }\n"
        + "  pylisted { type = pypi, url = \"" + u + "/pypi/simple/\", " + listed + " }\n"
        + "}\n");
    node = processes.serve("confine", List.of(), temp.resolve("data"), List.of("--config", conf.toString()));
    base = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterEach
  void stopFixtures() {
    if (up != null) up.close();
    if (other != null) other.close();
  }

  @Test
  void aGenericUpstreamsRedirectToAnotherOriginIsRefusedInEverySpellingAndNothingIsKept() throws Exception {
    for (String path : List.of("to-other?" + SIGNATURE, "to-decimal", "to-mapped")) {
      refusedTwice("gen", path, up.url() + "/gen/" + path);
    }
    assertEquals(0, other.count("/file.bin"), "no request reached the other host");

    HttpResponse<byte[]> listed = Http.getBytes(base + "/genlisted/to-other");
    assertEquals(200, listed.statusCode());
    assertEquals("from a host nobody configured", new String(listed.body(), UTF_8));
    assertEquals("HIT", Http.xCache(Http.getBytes(base + "/genlisted/to-other")));

    String logs = node.stdout() + node.stderr();
    assertTrue(logs.contains("refused"), "the refusal is logged\n" + node.output());
    assertTrue(logs.contains("/gen/to-other?..."), "the key is logged without its query\n" + node.output());
    assertFalse(logs.contains("s3cr3tsig"), "no query in the logs\n" + node.output());
  }

  @Test
  void theCredentialNeverLeavesTheRepositorysBasePath() throws Exception {
    refusedTwice("private", "file", up.url() + "/private/file");
    assertEquals(0, up.count("/public/file"), "the hop outside the base path was not made");
    FixtureRegistry.Request first = up.requests().stream().filter(r -> r.path().equals("/private/file")).findFirst()
        .orElseThrow();
    assertEquals(Optional.of("Bearer upstream-token"), first.header("Authorization"), "inside the base path it is sent");
  }

  @Test
  void anNpmTarballOnAnotherOriginIsRefusedUnlessListed() throws Exception {
    assertEquals(200, Http.getBytes(base + "/npm/evil").statusCode());
    // K1: the key is the canonical URL; the fetch learns the other origin from the packument
    refusedTwice("npm", "evil/-/evil-1.0.0.tgz", up.url() + "/npm/evil/-/evil-1.0.0.tgz");
    assertEquals(0, other.count("/evil/-/evil-1.0.0.tgz"));

    assertEquals(200, Http.getBytes(base + "/npmlisted/evil").statusCode());
    HttpResponse<byte[]> listed = Http.getBytes(base + "/npmlisted/evil/-/evil-1.0.0.tgz");
    assertEquals(200, listed.statusCode());
    assertEquals("tarball from a host nobody configured", new String(listed.body(), UTF_8));
  }

  @Test
  void aPypiLinkToAnotherOriginOrOutOfTheBasePathIsRefusedUnlessListed() throws Exception {
    refusedTwice("py", "-/files/evil/evil-1.0.tar.gz", other.url() + "/files/evil-1.0.tar.gz");
    refusedTwice("py", "-/files/evil/evil-1.0-py3-none-any.whl", up.url() + "/outside/evil-1.0-py3-none-any.whl");
    assertEquals(0, other.count("/files/evil-1.0.tar.gz"));
    assertEquals(0, up.count("/outside/evil-1.0-py3-none-any.whl"));

    HttpResponse<byte[]> beside = Http.getBytes(base + "/py/-/files/evil/evil-1.0.zip");
    assertEquals(200, beside.statusCode(), "files beside simple/ are inside a PyPI repository's base path");
    HttpResponse<byte[]> listed = Http.getBytes(base + "/pylisted/-/files/evil/evil-1.0.tar.gz");
    assertEquals(200, listed.statusCode());
    assertEquals("sdist from a host nobody configured", new String(listed.body(), UTF_8));
  }

  /**
   * Two requests, each a 502 that names no address, port or query, neither served from the cache,
   * and no record of the key in the node's store.
   */
  private void refusedTwice(String repo, String path, String keyUrl) throws Exception {
    for (int i = 0; i < 2; i++) {
      HttpResponse<byte[]> r = Http.getBytes(base + "/" + repo + "/" + path);
      String body = new String(r.body(), UTF_8);
      assertEquals(502, r.statusCode(), repo + "/" + path + ": " + body);
      assertNotEquals("HIT", Http.xCache(r), repo + "/" + path);
      assertTrue(body.contains("refused by policy"), body);
      for (String leak : List.of("127.0.0.1", "2130706433", "::ffff", Integer.toString(otherPort), "?", "s3cr3tsig")) {
        assertFalse(body.contains(leak), "the body names " + leak + ": " + body);
      }
    }
    String keyId = ArtifactKey.of(repo, keyUrl).id();
    try (Stream<Path> files = Files.walk(temp.resolve("data"))) {
      assertEquals(List.of(), files.filter(f -> f.getFileName().toString().startsWith(keyId)).toList(),
          "no record of " + keyUrl);
    }
  }

  private static Optional<FixtureRegistry.Answer> redirect(String location) {
    return Optional.of(new FixtureRegistry.Answer(302, "text/plain", new byte[0], Map.of("Location", location)));
  }

  private static void write(Path root, String path, String content) throws IOException {
    Path file = root.resolve(path);
    Files.createDirectories(file.getParent());
    Files.writeString(file, content);
  }
}
