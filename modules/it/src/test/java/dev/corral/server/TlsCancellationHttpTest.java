package dev.corral.server;

import static dev.corral.testkit.TestNode.await;
import static dev.corral.testkit.TestNode.ok;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.testkit.ManualScheduler;
import dev.corral.testkit.ManualTicker;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * SEMANTICS C1 over TLS, for HTTP/2 and HTTP/1.1 alike: a client (the real curl) that hangs up
 * while waiting on a slow fetch is noticed from its connection's end, on a node whose time stands
 * still, so nothing but the close can end its waiter (docs/security.md, "TLS").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TlsCancellationHttpTest {
  private final ManualTicker ticker = new ManualTicker();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().manualTime(new ManualScheduler(ticker))
      .args(n -> NodeTls.args());

  private int base;

  @BeforeEach
  void baseline() {
    base = node.server().cancels().registrations();
  }

  private int registered() {
    return node.server().cancels().registrations() - base;
  }

  @ParameterizedTest
  @ValueSource(strings = {"--http2", "--http1.1"})
  void aTlsClientHangingUpLeavesAtOnce(String version) throws Exception {
    String path = "/c/" + version.substring(2) + ".bin";
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    node.paths.put(path, (exchange, n) -> {
      arrived.countDown();
      await(release);
      ok(exchange, TestNode.bytes(1024, 3));
    });
    String url = "https://127.0.0.1:" + node.server().address().getPort() + "/up" + path;
    Process curl = new ProcessBuilder("curl", "-sS", version, "--cacert", NodeTls.CA.caCert().toString(), "-o", "/dev/null", url)
        .redirectErrorStream(true).start();
    try {
      await(arrived);
      TestNode.await("the client's waiter registered", Duration.ofSeconds(20), () -> registered() == 1);
      long nodeTime = ticker.read();
      curl.destroyForcibly();
      curl.waitFor(20, TimeUnit.SECONDS);
      TestNode.await("the hung-up client's waiter left", Duration.ofSeconds(20), () -> registered() == 0);
      assertEquals(nodeTime, ticker.read(), "no node time passed: no timer of the node ended the wait");
    } finally {
      curl.destroyForcibly();
      release.countDown();
      // The next case counts from an empty registry, whatever became of this one's waiter.
      TestNode.await("no waiter left", Duration.ofSeconds(20), () -> registered() == 0);
    }
  }
}
