package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.stream.Materializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Freshness of mutable metadata through a whole node: the front door, the entity, the HTTP
 * upstream client and a fake upstream on loopback. Until the registry adapters say which keys
 * are mutable, the tests hand the front door a key and the flag ({@link
 * dev.corral.http.FrontDoor#serve}), as an adapter will.
 *
 * <p>Repositories: {@code swr} (metadata-ttl 0s, max-stale 1h: every later request is STALE
 * while it revalidates), {@code sync} (metadata-ttl 0s, max-stale 0s: every later request waits
 * for its revalidation) and {@code up} (defaults).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FreshnessHttpTest {
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().config(n -> """
      corral.repos {
        swr { type = generic, url = "%s", metadata-ttl = 0s, max-stale = 1h, retries = 0 }
        sync { type = generic, url = "%s", metadata-ttl = 0s, max-stale = 0s, retries = 0 }
      }
      """.formatted(n.url("/"), n.url("/")));

  /** What a client would see, for the key as mutable metadata. */
  private record Seen(int status, String xCache, String warning, String body) {}

  private Seen serve(String repo, String path, String variant) throws Exception {
    ArtifactKey key = new ArtifactKey(repo, node.upstream().url(path), variant, null);
    HttpResponse r = node.server().frontDoor().serve(HttpRequest.GET("/" + repo + path), key, true)
        .toCompletableFuture().get(20, TimeUnit.SECONDS);
    HttpEntity.Strict body = r.entity().toStrict(10_000, Materializer.matFromSystem(node.server().system()))
        .toCompletableFuture().get(20, TimeUnit.SECONDS);
    return new Seen(r.status().intValue(),
        r.getHeader("X-Cache").map(h -> h.value()).orElse(null),
        r.getHeader("Warning").map(h -> h.value()).orElse(null),
        body.getData().decodeString(StandardCharsets.UTF_8));
  }

  private Seen serve(String repo, String path) throws Exception {
    return serve(repo, path, "");
  }

  /** 304 when the request carries the current ETag, else 200 with it. */
  private static FakeUpstream.Handler validating(String etag, String body) {
    return (exchange, n) -> {
      if (etag.equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) {
        exchange.getResponseHeaders().add("ETag", etag);
        FakeUpstream.send(exchange, 304, new byte[0]);
        return;
      }
      exchange.getResponseHeaders().add("ETag", etag);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      FakeUpstream.send(exchange, 200, body.getBytes(StandardCharsets.UTF_8));
    };
  }

  private double requests(String repo, String result) {
    return node.server().metrics().requests.labelValues(repo, result).get();
  }

  @Test
  void aStaleCopyIsServedAsStaleWhileOneConditionalRequestRevalidatesIt() throws Exception {
    node.paths.put("/swr/a", validating("\"e1\"", "meta v1"));
    assertEquals(new Seen(200, "MISS", null, "meta v1"), serve("swr", "/swr/a"));
    double staleBefore = requests("swr", "stale");

    assertEquals(new Seen(200, "STALE", null, "meta v1"), serve("swr", "/swr/a"));
    TestNode.await("the revalidation reached the upstream", Duration.ofSeconds(10),
        () -> node.upstream().requests("/swr/a") >= 2);
    FakeUpstream.Seen conditional = node.upstream().seen.stream().filter(s -> s.path().equals("/swr/a")).toList().get(1);
    assertEquals("\"e1\"", conditional.header("If-None-Match"));
    assertEquals(staleBefore + 1, requests("swr", "stale"));
  }

  @Test
  void pastMaxStaleTheRequestWaitsForTheRevalidationAndIsRevalidated() throws Exception {
    node.paths.put("/sync/a", validating("\"s1\"", "meta s1"));
    assertEquals(new Seen(200, "MISS", null, "meta s1"), serve("sync", "/sync/a"));
    double before = requests("sync", "revalidated");

    assertEquals(new Seen(200, "REVALIDATED", null, "meta s1"), serve("sync", "/sync/a"));
    assertEquals(2, node.upstream().requests("/sync/a"));
    assertEquals(before + 1, requests("sync", "revalidated"));
  }

  @Test
  void anUpstreamErrorServesTheLastGoodCopyWithAWarning() throws Exception {
    node.paths.put("/swr/down", (exchange, n) -> {
      if (n == 1) {
        exchange.getResponseHeaders().add("ETag", "\"d1\"");
        FakeUpstream.send(exchange, 200, "last good".getBytes(StandardCharsets.UTF_8));
      } else {
        FakeUpstream.send(exchange, 500, "down".getBytes(StandardCharsets.UTF_8));
      }
    });
    assertEquals("MISS", serve("swr", "/swr/down").xCache());
    // The first stale answer starts the revalidation; once it has failed, answers say so.
    TestNode.await("a stale answer carrying the warning", Duration.ofSeconds(10), () -> {
      try {
        return serve("swr", "/swr/down").warning() != null;
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    assertEquals(new Seen(200, "STALE", "111 - \"Revalidation Failed\"", "last good"), serve("swr", "/swr/down"));
  }

  @Test
  void aVariantIsAskedForWithItsAcceptHeader() throws Exception {
    node.paths.put("/up/simple", (exchange, n) -> FakeUpstream.send(exchange, 200,
        ("as " + exchange.getRequestHeaders().getFirst("Accept")).getBytes(StandardCharsets.UTF_8)));
    assertEquals("as application/vnd.pypi.simple.v1+json",
        serve("up", "/up/simple", "application/vnd.pypi.simple.v1+json").body());
    assertEquals("as text/html", serve("up", "/up/simple", "text/html").body());
    assertEquals(2, node.upstream().requests("/up/simple"));
    assertEquals("HIT", serve("up", "/up/simple", "text/html").xCache());
    assertEquals(2, node.upstream().requests("/up/simple"));
  }

  @Test
  void genericRepositoryKeysAreImmutableArtifacts() {
    node.paths.put("/swr/artifact.jar", validating("\"j1\"", "jar bytes"));
    var first = node.get("/swr/swr/artifact.jar");
    assertEquals("MISS", TestNode.xCache(first));
    // metadata-ttl is 0s in this repository, yet an artifact is a HIT: never revalidated.
    var second = node.get("/swr/swr/artifact.jar");
    assertEquals("HIT", TestNode.xCache(second));
    assertNull(second.headers().firstValue("Warning").orElse(null));
    assertEquals(1, node.upstream().requests("/swr/artifact.jar"));
    assertTrue(new String(second.body(), StandardCharsets.UTF_8).equals("jar bytes"));
  }
}
