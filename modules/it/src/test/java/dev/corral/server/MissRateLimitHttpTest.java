package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, the per-client miss rate limit ({@code --miss-rate-limit 2/s --miss-rate-burst 3}):
 * a client may send 3 misses at once, then one per half second of the node's (manual) time;
 * beyond that it gets 429 with Retry-After, counted, and nothing reaches the upstream. Hits are
 * never limited. A client's own X-Forwarded-For is not believed (no trusted proxies).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MissRateLimitHttpTest {
  private final ManualScheduler timers = new ManualScheduler(new ManualTicker());

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .manualTime(timers)
      .otherwise((exchange, n) -> FakeUpstream.send(exchange, 200, TestNode.bytes(1024, 7)))
      .args(n -> new String[] {"--miss-rate-limit", "2/s", "--miss-rate-burst", "3"});

  private double limited() {
    return node.server().metrics().missRateLimited.labelValues("up").get();
  }

  @Test
  void missesBeyondTheBucketGet429WithRetryAfterWhileHitsAreServed() {
    double before = limited();
    for (int i = 0; i < 3; i++) {
      assertEquals(200, node.get("/up/m/a" + i).statusCode(), "miss " + i + " of the burst");
    }
    HttpResponse<byte[]> over = node.get("/up/m/a3");
    assertEquals(429, over.statusCode());
    assertEquals("1", over.headers().firstValue("Retry-After").orElse("(none)"));
    assertEquals(0, node.upstream().requests("/m/a3"), "a limited miss never reaches the upstream");
    assertEquals(429, node.get("/up/m/a4", "X-Forwarded-For", "192.0.2.7").statusCode(),
        "a client's own X-Forwarded-For does not make it another client");

    HttpResponse<byte[]> hit = node.get("/up/m/a0");
    assertEquals(200, hit.statusCode(), "a hit is never limited");
    assertEquals("HIT", hit.headers().firstValue("X-Cache").orElse("(none)"));
    assertEquals(before + 2, limited(), "each 429 counted");

    timers.ticker().advance(Duration.ofMillis(499));
    assertEquals(429, node.get("/up/m/a3").statusCode(), "not yet a whole token back");
    timers.ticker().advance(Duration.ofMillis(1));
    assertEquals(200, node.get("/up/m/a3").statusCode(), "half a second of the node's time gives one miss back");
    assertEquals(429, node.get("/up/m/a5").statusCode());
    assertEquals(before + 4, limited());
  }
}
