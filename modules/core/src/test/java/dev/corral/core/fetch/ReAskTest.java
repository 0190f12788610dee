package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.wait.Waiters;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.junit.jupiter.api.Test;

/**
 * SEMANTICS W4 (nothing stranded) for an ask whose Join is lost (sent to an entity that was
 * stopping, or whose node died): the node asks again once the ask has gone unanswered for
 * {@link Waiters#ASK_AGAIN} of the node's time, on its scheduler, and never sooner, and an
 * answered ask is never asked again by its timer. The key's entity here is a stand-in that drops
 * the Joins a test wants lost (what a Join sent to a stopped actor becomes), answers Retry where
 * it wants an entity that stopped, and every other Join at once with a not-found.
 */
class ReAskTest extends EntityTestBase {
  /** Joins the stand-in entities received, by entity id. */
  private final Map<String, AtomicInteger> joins = new ConcurrentHashMap<>();

  @Override
  void initEntities() {
    ClusterSharding.get(kit.system()).init(Entity.of(FetchEntity.TYPE_KEY, ctx -> Behaviors.receive(FetchEntity.Command.class)
        .onMessage(FetchEntity.Join.class, join -> {
          int n = joins.computeIfAbsent(ctx.getEntityId(), id -> new AtomicInteger()).incrementAndGet();
          String url = join.key().url();
          if (url.contains("/retry-then-lost/") && n == 1) {
            join.replyTo().tell(new Reply.Retry("stand-in: stopped"));
          } else if (!(url.contains("/lost/") && n == 1 || url.contains("/retry-then-lost/") && n == 2)) {
            join.replyTo().tell(new Reply.NotFound(Via.MISS, false, List.of()));
          }
          return Behaviors.same();
        })
        .onMessage(FetchEntity.Purge.class, purge -> {
          purge.replyTo().tell(Done.getInstance()); // answers barrier()
          return Behaviors.same();
        })
        .onMessage(FetchEntity.Stop.class, stop -> Behaviors.stopped())
        .onAnyMessage(other -> Behaviors.same())
        .build())
        .withStopMessage(FetchEntity.Stop.INSTANCE));
  }

  private int joins(ArtifactKey key) {
    AtomicInteger n = joins.get(key.id());
    return n == null ? 0 : n.get();
  }

  @Test
  void w4_anAskLeftUnansweredIsAskedAgainAfterAskAgainOfTheNodesTime() {
    ArtifactKey key = ArtifactKey.of(repo(withBudget(Duration.ofHours(1))), url("lost/join"));
    long sent = waiters.joinsSent();
    CompletableFuture<Waiters.Answer> answer = ask(key);
    awaitAssert(() -> assertEquals(1, joins(key), "the first Join reached the entity"));

    ticker.advance(Waiters.ASK_AGAIN.minusNanos(1));
    assertEquals(1, waiters.joinsSent() - sent, "asked again before ASK_AGAIN had passed");
    assertFalse(answer.isDone());

    ticker.advance(Duration.ofNanos(1)); // returns once the re-ask has been sent
    assertEquals(2, waiters.joinsSent() - sent, "not asked again");
    assertFalse(reply(answer, Reply.NotFound.class).gone(), "answered by the second Join");
    assertEquals(2, joins(key));
  }

  @Test
  void anAnsweredAskIsNotAskedAgain() {
    ArtifactKey key = ArtifactKey.of(repo(withBudget(Duration.ofHours(1))), url("answered"));
    long sent = waiters.joinsSent();
    reply(ask(key), Reply.NotFound.class);

    ticker.advance(Waiters.ASK_AGAIN.multipliedBy(3));
    assertEquals(1, waiters.joinsSent() - sent, "an answered ask's re-ask timer was left running");
    barrier(key);
    assertEquals(1, joins(key));
  }

  @Test
  void anAskToldToRetryIsAskedAgainAfterItsPauseAndItsOwnTimerNoLonger() {
    // W3: a waiter whose entity stopped asks again after a pause; the Retry settled the first ask,
    // so its re-ask timer must not send a second, parallel Join.
    ArtifactKey key = ArtifactKey.of(repo(withBudget(Duration.ofHours(1))), url("retry-then-lost/join"));
    long sent = waiters.joinsSent();
    CompletableFuture<Waiters.Answer> answer = ask(key); // t = 0: Join 1, answered Retry
    Duration longestPause = Duration.ofMillis(500);
    awaitAssert(() -> assertEquals(1, scheduler.dueWithin(longestPause), "the pause after Retry is scheduled"));
    ticker.advance(longestPause); // t = 0.5 s: Join 2, lost
    assertEquals(2, waiters.joinsSent() - sent);
    awaitAssert(() -> assertEquals(2, joins(key)));

    ticker.advance(Waiters.ASK_AGAIN.minus(longestPause)); // t = 5 s: the first ask's timer would fall due
    assertEquals(2, waiters.joinsSent() - sent, "the first ask, answered Retry, was asked again by its timer");
    assertFalse(answer.isDone());
    ticker.advance(longestPause); // t = 5.5 s: the second ask has gone unanswered for ASK_AGAIN
    assertEquals(3, waiters.joinsSent() - sent);
    assertFalse(reply(answer, Reply.NotFound.class).gone());
    assertEquals(3, joins(key));
  }
}
