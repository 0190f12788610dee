package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.ManualClock;
import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cleanup policy {@code max-age-unused} on a node (issue 16, part 2): a repository's keys that
 * no request used for its age are removed by the node's periodic sweep, counted by repository;
 * a key used meanwhile, and the keys of a repository without the policy, stay. The node's wall
 * clock and its scheduler are moved by hand.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CleanupPolicyHttpTest {
  private static final Duration DAY = Duration.ofDays(1);
  private final ManualScheduler timers = new ManualScheduler(new ManualTicker());
  private final ManualClock clock = new ManualClock();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .otherwise((exchange, n) -> TestNode.ok(exchange, TestNode.bytes(500, exchange.getRequestURI().getPath().hashCode())))
      .manualTime(timers)
      .clock(clock)
      .config(n -> """
          corral.repos {
            tidy { type = generic, url = "%s", max-age-unused = 2d }
            kept { type = generic, url = "%s" }
          }
          """.formatted(n.url("/tidy/"), n.url("/kept/")));

  private String xCache(String path) {
    HttpResponse<byte[]> r = node.get(path);
    assertEquals(200, r.statusCode(), path);
    return TestNode.xCache(r);
  }

  @Test
  void keysUnusedForTheirRepositorysAgeAreRemovedByTheSweepAndUsedOnesStay() {
    assertEquals("MISS", xCache("/tidy/old.bin"));
    assertEquals("MISS", xCache("/tidy/used.bin"));
    assertEquals("MISS", xCache("/kept/old.bin"));
    clock.advance(DAY);
    assertEquals("HIT", xCache("/tidy/used.bin")); // a use: its two days start again
    clock.advance(DAY.plusMinutes(1));
    // A sweep every hour (a 24th of two days, at most an hour).
    timers.ticker().advance(Duration.ofHours(1));

    String metrics = new String(node.get("/-/metrics").body(), StandardCharsets.UTF_8);
    assertTrue(metrics.contains("corral_cleanup_removed_total{repo=\"tidy\"} 1.0"), metrics);
    assertTrue(metrics.contains("corral_cleanup_removed_bytes_total{repo=\"tidy\"} 500.0"), metrics);
    assertTrue(metrics.contains("corral_store_evictions_total{reason=\"unused\"} 1.0"), metrics);
    assertEquals("HIT", xCache("/tidy/used.bin"));
    assertEquals("HIT", xCache("/kept/old.bin"), "a repository without the policy keeps its keys");
    assertEquals("MISS", xCache("/tidy/old.bin"), "removed: fetched again");
    assertEquals(2, node.upstream().requests("/tidy/old.bin"));

    // Unused since: a later sweep removes them all but the one just fetched again, after its age.
    clock.advance(DAY.multipliedBy(2).plusMinutes(1));
    timers.ticker().advance(Duration.ofHours(1));
    assertEquals("MISS", xCache("/tidy/used.bin"));
    assertEquals("HIT", xCache("/kept/old.bin"));
  }
}
