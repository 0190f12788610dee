package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 16 through a real Corral process configured in HOCON: a generic repository honours the
 * upstream's Cache-Control (max-age revalidated with a conditional request, no-store never
 * stored), a path rule overrides it, and what a stored copy's lifetime is survives a restart
 * (it is kept with the copy's headers, not in memory).
 */
class GenericFreshnessIT {
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private FakeUpstream upstream;
  /** Requests per path that carried If-None-Match. */
  private final Map<String, Integer> conditional = new ConcurrentHashMap<>();

  @AfterEach
  void stopUpstream() {
    if (upstream != null) {
      upstream.close();
    }
  }

  private void answer(HttpExchange exchange, int n) throws IOException {
    String path = exchange.getRequestURI().getPath();
    String cacheControl = switch (path) {
      case "/deb/dists/stable/Release" -> "max-age=3600";
      case "/deb/quick" -> "max-age=1";
      case "/deb/pool/a.deb" -> "no-cache";
      case "/deb/live.json" -> "no-store";
      default -> null;
    };
    if (cacheControl == null) {
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    exchange.getResponseHeaders().add("Cache-Control", cacheControl);
    exchange.getResponseHeaders().add("ETag", "\"v1\"");
    if ("\"v1\"".equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) {
      conditional.merge(path, 1, Integer::sum);
      FakeUpstream.send(exchange, 304, new byte[0]);
      return;
    }
    FakeUpstream.send(exchange, 200, ("body of " + path).getBytes(StandardCharsets.UTF_8));
  }

  private static HttpResponse<byte[]> get(String url) {
    try {
      return Http.getBytes(url);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static String xCache(String url) {
    HttpResponse<byte[]> r = get(url);
    assertEquals(200, r.statusCode(), url);
    return Http.xCache(r);
  }

  /** Probes (bounded) until {@code url} is answered REVALIDATED: fresh answers (HIT) come first. */
  private static void awaitRevalidated(String url) throws Exception {
    Await.until(Duration.ofSeconds(30), () -> url + " was not answered REVALIDATED once its max-age passed", () -> {
      String x = xCache(url);
      assertTrue(x.equals("HIT") || x.equals("REVALIDATED"), url + ": " + x);
      return x.equals("REVALIDATED");
    });
  }

  @Test
  void aGenericRepositoryHonoursTheUpstreamsHeadersAndItsRulesAcrossARestart() throws Exception {
    upstream = new FakeUpstream(this::answer);
    Path conf = temp.resolve("corral.conf");
    Files.writeString(conf, """
        corral.repos.deb {
          type = generic
          url = "%s"
          max-stale = 0s
          freshness = [ { path = "pool/**", immutable = true } ]
        }
        """.formatted(upstream.url("/deb/")));
    Path dataDir = temp.resolve("data");
    List<String> args = List.of("--config", conf.toString());

    CorralProcess first = processes.serve("fresh-first", List.of(), dataDir, args);
    String base = first.awaitListening(Duration.ofSeconds(60)) + "/deb";

    assertEquals("MISS", xCache(base + "/dists/stable/Release"));
    assertEquals("HIT", xCache(base + "/dists/stable/Release"));
    assertEquals("MISS", xCache(base + "/pool/a.deb"));
    assertEquals("HIT", xCache(base + "/pool/a.deb"), "the rule's immutable wins over the upstream's no-cache");
    assertEquals("MISS", xCache(base + "/live.json"));
    assertEquals("MISS", xCache(base + "/live.json"), "no-store: never a hit");
    assertEquals(2, upstream.requests("/deb/live.json"));
    assertEquals("MISS", xCache(base + "/quick"));
    awaitRevalidated(base + "/quick");
    assertEquals(1, conditional.get("/deb/quick"));

    first.terminate();
    first.awaitExit(Duration.ofSeconds(60));
    CorralProcess second = processes.serve("fresh-second", List.of(), dataDir, args);
    base = second.awaitListening(Duration.ofSeconds(60)) + "/deb";

    assertEquals("HIT", xCache(base + "/dists/stable/Release"), "still within its max-age after the restart");
    assertEquals(1, upstream.requests("/deb/dists/stable/Release"));
    assertEquals("HIT", xCache(base + "/pool/a.deb"));
    assertEquals(1, upstream.requests("/deb/pool/a.deb"));
    // The one-second lifetime was kept with the stored copy: after the restart it still goes stale.
    awaitRevalidated(base + "/quick");
    assertEquals(2, conditional.get("/deb/quick"));
    assertEquals("MISS", xCache(base + "/live.json"));
    assertEquals(3, upstream.requests("/deb/live.json"));
  }
}
