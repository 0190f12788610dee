package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The cleanup policy {@code max-age-unused} in a real process configured in HOCON (issue 16): the
 * node's own sweep removes a repository's key unused for its age and counts it by repository; a
 * repository without the policy keeps its keys. The rule itself, with a clock and scheduler moved
 * by hand, is CleanupPolicyHttpTest's and DiskStoreTest's; here a two-second age is waited for
 * with a bounded probe of the node's metrics.
 */
class CleanupPolicyIT {
  private static final Pattern REMOVED = Pattern.compile("corral_cleanup_removed_total\\{repo=\"tidy\"} ([0-9.]+)");

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;
  private FakeUpstream upstream;

  @AfterEach
  void stopUpstream() {
    if (upstream != null) {
      upstream.close();
    }
  }

  private static String xCache(String url) throws Exception {
    HttpResponse<byte[]> r = Http.getBytes(url);
    assertEquals(200, r.statusCode(), url);
    return Http.xCache(r);
  }

  private static double removed(String base) throws Exception {
    Matcher m = REMOVED.matcher(new String(Http.getBytes(base + "/-/metrics").body(), StandardCharsets.UTF_8));
    return m.find() ? Double.parseDouble(m.group(1)) : -1;
  }

  @Test
  void aKeyUnusedForItsRepositorysAgeIsRemovedByTheNodesSweep() throws Exception {
    upstream = new FakeUpstream((exchange, n) ->
        FakeUpstream.send(exchange, 200, ("body of " + exchange.getRequestURI().getPath()).getBytes(StandardCharsets.UTF_8)));
    Path conf = temp.resolve("corral.conf");
    Files.writeString(conf, """
        corral.repos {
          tidy { type = generic, url = "%s", max-age-unused = 2s }
          kept { type = generic, url = "%s" }
        }
        """.formatted(upstream.url("/tidy/"), upstream.url("/kept/")));
    CorralProcess node = processes.serve("cleanup", List.of(), temp.resolve("data"), List.of("--config", conf.toString()));
    String base = node.awaitListening(Duration.ofSeconds(60));

    assertEquals(0.0, removed(base), "the policy's counter is shown from the start");
    assertEquals("MISS", xCache(base + "/tidy/a.bin"));
    assertEquals("MISS", xCache(base + "/kept/a.bin"));
    // Sweeps every second (a 24th of two seconds, at least a second).
    Await.until(Duration.ofSeconds(30), () -> "the unused key was not removed", () -> removed(base) >= 1.0);
    assertEquals(1.0, removed(base));
    assertEquals("MISS", xCache(base + "/tidy/a.bin"), "removed: fetched again");
    assertEquals(2, upstream.requests("/tidy/a.bin"));
    assertEquals("HIT", xCache(base + "/kept/a.bin"), "a repository without the policy keeps its keys");
  }
}
