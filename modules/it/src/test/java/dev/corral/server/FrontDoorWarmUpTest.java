package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.parallel.Isolated;
import org.slf4j.LoggerFactory;

/**
 * A starting node asks its own front door for its health check once (FrontDoor.warmUp), so that
 * its first clients do not pay for the first use of the connection code. That request is the
 * node's, not a client's: no access line, no response time. Isolated: other classes' nodes log
 * into the same access logger. In order: the first test looks at the node before any request of
 * the second.
 */
@Isolated
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FrontDoorWarmUpTest {
  /** Attached before the node starts (fields are set before the extension's beforeAll). */
  private final ListAppender<ILoggingEvent> access = capture();

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed();

  private static ListAppender<ILoggingEvent> capture() {
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    ((Logger) LoggerFactory.getLogger("corral.access")).addAppender(appender);
    return appender;
  }

  @AfterAll
  void release() {
    ((Logger) LoggerFactory.getLogger("corral.access")).detachAppender(access);
  }

  private List<String> healthLines() {
    return LoggedEvents.of(access).stream().map(ILoggingEvent::getFormattedMessage)
        .filter(l -> l.contains("path=/-/health/live ")).toList();
  }

  /** The count of {@code /-/} answers this node has timed, the scrape itself not yet among them. */
  private double timedOwnRoutes() {
    HttpResponse<byte[]> r = node.get("/-/metrics");
    assertEquals(200, r.statusCode());
    return Scrape.parse(new String(r.body(), StandardCharsets.UTF_8))
        .valueOrZero("corral_http_response_seconds_count", "repo", "-", "cache", "none");
  }

  @Test
  @Order(1)
  void aStartingNodeAsksItsOwnFrontDoorOnceAndNeitherLogsNorTimesIt() throws Exception {
    assertEquals(Optional.of(200), node.server().warmUp().toCompletableFuture().get(30, TimeUnit.SECONDS));
    // Closed once answered: the client's pool would otherwise keep it open for a minute.
    TestNode.await("the warm-up's connection closed", Duration.ofSeconds(10),
        () -> node.server().metrics().httpConnections.get() == 0);
    assertEquals(List.of(), healthLines(), "the node's own request has no access line");
    assertEquals(0, timedOwnRoutes(), "nor a response time");
  }

  @Test
  @Order(2)
  void aClientGuessingAtTheWarmUpsTargetIsLoggedAndTimedLikeAnyOther() throws Exception {
    node.server().warmUp().toCompletableFuture().get(30, TimeUnit.SECONDS);
    double before = timedOwnRoutes();
    HttpResponse<byte[]> guess = node.get("/-/health/live?warm-up=" + "0".repeat(32));
    assertEquals(200, guess.statusCode());
    assertEquals(2, timedOwnRoutes() - before, "the scrape before and the guess");
    List<String> lines = healthLines();
    assertEquals(1, lines.size(), lines.toString());
    assertTrue(lines.get(0).startsWith("GET repo=- path=/-/health/live status=200"), lines.get(0));
  }
}
