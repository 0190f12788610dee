package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The admin API's listings over real HTTP (issue 16, part 2): {@code /-/admin/repos} names every
 * repository with its type, upstream and what this node holds for it; {@code /-/admin/keys} pages
 * through a repository's keys by URL, filtered by a path prefix; {@code /-/admin/cluster} shows
 * the members and their shards; all need the admin token.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class AdminListingsHttpTest {
  static final String ADMIN = "adm-listings-0123456789";
  private static final ObjectMapper JSON = new ObjectMapper();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .otherwise((exchange, n) -> TestNode.ok(exchange, TestNode.bytes(100 + exchange.getRequestURI().getPath().length(), 3)))
      .config(n -> """
          corral.repos {
            files { type = generic, url = "%s" }
            npm { type = npm, url = "%s" }
          }
          """.formatted(n.url("/files/"), n.url("/registry/")))
      .args(n -> {
        Path admin = n.dir().resolve("admin-token");
        Files.writeString(admin, ADMIN + "\n");
        return new String[] {"--admin-token-file", admin.toString()};
      });

  private JsonNode admin(String target) throws Exception {
    HttpResponse<byte[]> r = node.get(target, "Authorization", "Bearer " + ADMIN);
    assertEquals(200, r.statusCode(), new String(r.body()));
    assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(null));
    return JSON.readTree(r.body());
  }

  private JsonNode repo(JsonNode repos, String name) {
    for (JsonNode r : repos.path("repos")) {
      if (r.path("name").asText().equals(name)) {
        return r;
      }
    }
    throw new AssertionError("no repository " + name + " in " + repos);
  }

  @Test
  void theListingsNeedTheAdminToken() {
    assertEquals(401, node.get("/-/admin/repos").statusCode());
    assertEquals(401, node.get("/-/admin/keys?repo=files", "Authorization", "Bearer wrong").statusCode());
  }

  @Test
  void reposAndKeysListWhatThisNodeHoldsPageByPage() throws Exception {
    List<String> paths = List.of("/files/a/one.bin", "/files/a/two.bin", "/files/b/three.bin", "/files/a/four.bin");
    long bytes = 0;
    for (String p : paths) {
      HttpResponse<byte[]> r = node.get(p);
      assertEquals(200, r.statusCode());
      bytes += r.body().length;
    }
    JsonNode repos = admin("/-/admin/repos");
    JsonNode files = repo(repos, "files");
    assertEquals("generic", files.path("type").asText());
    assertEquals(node.url("/files"), files.path("upstream").asText());
    assertEquals(4, files.path("keys").asLong());
    assertEquals(bytes, files.path("bytes").asLong());
    assertEquals("npm", repo(repos, "npm").path("type").asText());
    assertEquals(0, repo(repos, "npm").path("keys").asLong());

    // Two a page, by URL: a/four, a/one | a/two, b/three.
    List<String> seen = new ArrayList<>();
    JsonNode page = admin("/-/admin/keys?repo=files&limit=2");
    page.path("keys").forEach(k -> seen.add(k.path("url").asText()));
    assertTrue(page.has("next"), page.toString());
    JsonNode last = admin("/-/admin/keys?repo=files&limit=2&after=" + page.path("next").asText());
    last.path("keys").forEach(k -> seen.add(k.path("url").asText()));
    assertFalse(last.has("next"), last.toString());
    assertEquals(List.of(node.url("/files/a/four.bin"), node.url("/files/a/one.bin"), node.url("/files/a/two.bin"),
        node.url("/files/b/three.bin")), seen);
    JsonNode first = page.path("keys").path(0);
    assertTrue(first.path("size").asLong() > 100);
    assertEquals(64, first.path("sha256").asText().length());
    assertTrue(first.path("ageSeconds").asLong() >= 0);
    assertEquals(1, first.path("holders").size(), "a node alone is the one holder: " + first);

    // A path prefix under the upstream URL.
    JsonNode underA = admin("/-/admin/keys?repo=files&prefix=/a/");
    assertEquals(3, underA.path("keys").size(), underA.toString());
    assertEquals(node.url("/files/a/"), underA.path("prefix").asText());
  }

  @Test
  void theClusterViewNamesThisNodeUpWithItsShards() throws Exception {
    assertEquals(401, node.get("/-/admin/cluster").statusCode());
    assertEquals(200, node.get("/files/c/cluster.bin").statusCode()); // one entity, one shard at least
    JsonNode view = admin("/-/admin/cluster");
    assertEquals(1, view.path("members").size(), view.toString());
    JsonNode self = view.path("members").path(0);
    assertEquals(view.path("self").asText(), self.path("address").asText());
    assertEquals("Up", self.path("status").asText());
    assertTrue(self.path("reachable").asBoolean());
    assertTrue(self.path("shards").asInt() >= 1, view.toString());
    assertFalse(view.has("shardStatsMissing"), view.toString());
    assertEquals(view.path("self").asText(), view.path("leader").asText());
  }

  @Test
  void badListingQueriesAreRefused() {
    String auth = "Bearer " + ADMIN;
    assertEquals(400, node.get("/-/admin/keys", "Authorization", auth).statusCode());
    assertEquals(404, node.get("/-/admin/keys?repo=nothing", "Authorization", auth).statusCode());
    assertEquals(400, node.get("/-/admin/keys?repo=files&limit=0", "Authorization", auth).statusCode());
    assertEquals(400, node.get("/-/admin/keys?repo=files&limit=x", "Authorization", auth).statusCode());
    assertEquals(400, node.get("/-/admin/keys?repo=files&after=not*base64", "Authorization", auth).statusCode());
  }
}
