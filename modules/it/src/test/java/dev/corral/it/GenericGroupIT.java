package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A generic group in a real process configured on the command line (issue 16, part 1), as
 * docs/operations.md "Group repositories" says: {@code --repo all=group:first,second}; an artifact
 * only the second member has is served through the group, the first member's not-found is
 * remembered (it is not asked again within {@code negative-ttl}), a member that fails is answered
 * from the other with a {@code Warning} line and counted, and an artifact no member has is a 404.
 */
class GenericGroupIT {
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;
  private FakeUpstream first;
  private FakeUpstream second;

  @AfterEach
  void stopUpstreams() {
    for (FakeUpstream u : new FakeUpstream[] {first, second}) {
      if (u != null) {
        u.close();
      }
    }
  }

  private static byte[] body(String who, String path) {
    return (who + " " + path).getBytes(StandardCharsets.UTF_8);
  }

  @Test
  void aGenericGroupServesTheFirstMemberThatHasItAndSaysWhenAMemberFailed() throws Exception {
    first = new FakeUpstream((exchange, n) -> {
      String path = exchange.getRequestURI().getPath();
      int status = path.startsWith("/failing/") ? 502 : path.startsWith("/both/") ? 200 : 404;
      FakeUpstream.send(exchange, status, status == 200 ? body("first", path) : new byte[0]);
    });
    second = new FakeUpstream((exchange, n) -> {
      String path = exchange.getRequestURI().getPath();
      boolean has = !path.startsWith("/nowhere/");
      FakeUpstream.send(exchange, has ? 200 : 404, has ? body("second", path) : new byte[0]);
    });
    CorralProcess node = processes.serve("group", List.of(), temp.resolve("data"),
        List.of("--repo", "first=generic:" + first.url("/"), "--repo", "second=generic:" + second.url("/"),
            "--repo", "all=group:first,second"));
    String base = node.awaitListening(Duration.ofSeconds(60)) + "/all";

    HttpResponse<byte[]> onlySecond = Http.getBytes(base + "/only/a.bin");
    assertEquals(200, onlySecond.statusCode());
    assertArrayEquals(body("second", "/only/a.bin"), onlySecond.body());
    HttpResponse<byte[]> again = Http.getBytes(base + "/only/a.bin");
    assertArrayEquals(body("second", "/only/a.bin"), again.body());
    assertEquals("HIT", Http.xCache(again));
    assertEquals(1, first.requests("/only/a.bin"), "the first member's not-found is remembered");
    assertEquals(1, second.requests("/only/a.bin"));

    HttpResponse<byte[]> both = Http.getBytes(base + "/both/b.bin");
    assertArrayEquals(body("first", "/both/b.bin"), both.body(), "the first member wins");
    assertEquals(0, second.requests("/both/b.bin"));

    HttpResponse<byte[]> failed = Http.getBytes(base + "/failing/c.bin");
    assertEquals(200, failed.statusCode());
    assertArrayEquals(body("second", "/failing/c.bin"), failed.body());
    assertTrue(failed.headers().allValues("Warning").stream().anyMatch(w -> w.contains("member first failed: 502")),
        failed.headers().map().toString());
    String metrics = new String(Http.getBytes(node.awaitListening(Duration.ofSeconds(5)) + "/-/metrics").body(),
        StandardCharsets.UTF_8);
    assertTrue(metrics.contains("corral_group_member_failures_total{group=\"all\",member=\"first\"} 1.0"), metrics);

    assertEquals(404, Http.getBytes(base + "/nowhere/d.bin").statusCode());
  }
}
