package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.download.Failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamResponse;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS W1-W4: how waiters are woken, what they get, their budget, nobody stranded. */
class WaitingTest extends EntityTestBase {

  @Test
  void w1_waitersAreWokenByTheOutcomeNotBeforeIt() {
    // W1: Waiters are woken by a message the moment the outcome is known.
    String u = url("wake");
    ArtifactKey key = ArtifactKey.of(repo(withBudget(Duration.ofHours(1))), u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 4);
    barrier(key);
    assertFalse(answers.stream().anyMatch(CompletableFuture::isDone), "answered before the outcome");
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("now")));
    // With an hour of budget nothing but the outcome's message can end these waits.
    answers.forEach(a -> assertEquals("now", reply(a, Reply.Body.class).bytes().utf8String()));
  }

  @Test
  void w2_aFailedFetchReachesEveryWaiterAndTheNextRequestRetries() {
    // W2: Every waiter joined to a fetch gets that fetch's outcome; a failure is not cached and the key is free for the next request.
    String u = url("unavailable");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 8);
    barrier(key);
    gate.completeExceptionally(new UpstreamException("503", "upstream unavailable after retries", false, null));
    answers.forEach(a -> assertEquals(Failure.UPSTREAM_ERROR, reply(a, Reply.Failed.class).cause()));
    assertEquals(1, upstream.count(u), "waiters never retry on their own");

    upstream.serve(u, ByteString.fromString("recovered"));
    Reply.Body again = reply(ask(key), Reply.Body.class);
    assertEquals("recovered", again.bytes().utf8String());
    assertEquals(Via.MISS, again.via());
    assertEquals(2, upstream.count(u));
  }

  @Test
  void w2_anUpstream500IsA502ForEveryWaiterAndIsNotCached() {
    // W2: Every waiter gets the final error; a failure is not cached.
    String u = url("server-error");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 4);
    barrier(key);
    gate.complete(ScriptedUpstream.of(500, Source.single(ByteString.fromString("oops")), OptionalLong.of(4)));
    answers.forEach(a -> assertEquals(Failure.UPSTREAM_ERROR, reply(a, Reply.Failed.class).cause()));
    assertTrue(node.store().lookup(key).isEmpty());

    upstream.serve(u, ByteString.fromString("fine now"));
    assertEquals("fine now", reply(ask(key), Reply.Body.class).bytes().utf8String());
    assertEquals(2, upstream.count(u));
  }

  @Test
  void w2_anUpstreamTimeoutIsA504ForEveryWaiter() {
    // W2: Every waiter gets the final error (a timeout: 504).
    String u = url("slow");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);
    gate.completeExceptionally(new UpstreamException("timeout", "first byte timeout", true, null));
    answers.forEach(a -> assertEquals(Failure.UPSTREAM_TIMEOUT, reply(a, Reply.Failed.class).cause()));
  }

  @Test
  void w2_aNotFoundIsRememberedForItsTtlThenForgotten() {
    // W2: A not-found is cached, briefly, with its own TTL.
    String u = url("missing");
    ArtifactKey key = ArtifactKey.of(repo(), u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    awaitRequests(u, 1);
    gate.complete(ScriptedUpstream.of(404, Source.empty(), OptionalLong.of(0)));
    answers.forEach(a -> assertFalse(reply(a, Reply.NotFound.class).gone()));

    Reply.NotFound remembered = reply(ask(key), Reply.NotFound.class);
    assertEquals(Via.NEGATIVE, remembered.via());
    assertEquals(1, upstream.count(u));

    ticker.advance(FetchPolicy.defaults().negativeTtl().plusSeconds(1));
    upstream.serve(u, ByteString.fromString("published since"));
    assertEquals("published since", reply(ask(key), Reply.Body.class).bytes().utf8String());
    assertEquals(2, upstream.count(u));
  }

  @Test
  void w3_aWaiterWhoseBudgetRunsOutGetsTimedOut() {
    // W3: A waiter waits at most its budget for the outcome to begin; fall-throughs are counted by reason (budget).
    Duration budget = Duration.ofMillis(300);
    String repo = repo(withBudget(budget));
    String u = url("never-answers");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 2);
    barrier(key);

    // The budgets run in the node's time, which moves only when this test moves it.
    ticker.advance(budget.minusNanos(1));
    assertFalse(answers.stream().anyMatch(CompletableFuture::isDone), "answered before the budget ran out");
    assertEquals(0.0, fallthrough(repo, "budget"));

    // The due budgets have run; each asked the entity whether the fetch has begun (it has not:
    // no status yet), and is timed out when the entity's answer comes back.
    ticker.advance(Duration.ofNanos(1));
    for (var a : answers) {
      assertSame(Waiters.TimedOut.INSTANCE, answer(a), "still waiting when its budget ran out");
    }
    assertEquals(2.0, fallthrough(repo, "budget"));
    assertEquals(0.0, fallthrough(repo, "entity-stopped"));
    assertEquals(1, upstream.count(u), "a timed-out waiter does not go to the upstream itself");
  }

  @Test
  void w3_aBodyOfKnownLengthTrickledOverTwiceTheBudgetReachesEveryWaiter() {
    // W3: A waiter waits at most its budget for the outcome to begin (status and headers known).
    // 4 MiB is under the inline limit: answered only once complete, long after the budget.
    trickledOverTwiceTheBudget(true);
  }

  @Test
  void w3_aChunkedBodyTrickledOverTwiceTheBudgetReachesEveryWaiter() {
    // W3: ... for chunked or compressed (decoded, so of unknown length) answers too.
    trickledOverTwiceTheBudget(false);
  }

  private void trickledOverTwiceTheBudget(boolean lengthKnown) {
    Duration budget = Duration.ofMillis(400);
    String repo = repo(withBudget(budget));
    String u = url("trickled");
    ArtifactKey key = ArtifactKey.of(repo, u);
    int chunks = 8;
    ByteString body = bytes(4 << 20, 13);
    int chunk = body.size() / chunks;
    var trickle = Source.<ByteString>queue(chunks + 1).preMaterialize(kit.system());
    upstream.on(u, r -> CompletableFuture.completedFuture(ScriptedUpstream.of(200, trickle.second(),
        lengthKnown ? OptionalLong.of(body.size()) : OptionalLong.empty())));
    int n = 3;
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, n);
    awaitAssert(() -> assertTrue(begun(key), "the fetch has its status and headers"));

    // One chunk every quarter budget: twice the budget in all, each waiter's budget runs out twice.
    for (int i = 0; i < chunks; i++) {
      trickle.first().offer(body.slice(i * chunk, (i + 1) * chunk));
      ticker.advance(budget.dividedBy(4));
      // Each budget that ran out asked whether the fetch has begun, and, as it has, was armed again.
      awaitAssert(() -> assertEquals(n, scheduler.dueWithin(budget), "budgets armed again"));
      assertFalse(answers.stream().anyMatch(CompletableFuture::isDone), "answered before the body ended");
    }
    trickle.first().complete();
    for (var a : answers) {
      assertEquals(body, reply(a, Reply.Body.class).bytes());
    }
    assertEquals(0.0, fallthrough(repo, "budget"));
    assertEquals(1, upstream.count(u));
  }

  @Test
  void w3_aWaiterAnsweredBeforeItsBudgetRanOutIsToldTheOutcomeBegunAfterTheFetchEnded() {
    // W3: A waiter waits at most its budget for the outcome to begin. Its answer may still be on
    // the way (across the network) when its budget runs out after the fetch ended: the outcome
    // has begun for it, so it waits on instead of becoming a 504 (BudgetsIT saw that on 3 nodes).
    String u = url("answered");
    ArtifactKey key = ArtifactKey.of(repo(), u);
    upstream.serve(u, ByteString.fromString("done"));
    var client = kit.<Reply>createTestProbe();
    entity(key).tell(new FetchEntity.Join(key, 41, client.ref()));
    assertEquals("done", client.expectMessageClass(Reply.Body.class, WAIT).bytes().utf8String());
    assertTrue(begun(key, 41), "the waiter the fetch answered");
    assertFalse(begun(key, 42), "a waiter that never joined it");
  }

  /** Asks the key's entity whether the fetch a waiter joined has begun (status and headers known). */
  private boolean begun(ArtifactKey key) {
    return begun(key, 0);
  }

  private boolean begun(ArtifactKey key, long token) {
    return entity(key).<FetchEntity.Begun>ask(replyTo -> new FetchEntity.AskBegun(token, replyTo), WAIT)
        .toCompletableFuture().join().begun();
  }

  @Test
  void w3_theDefaultBudgetIsTwiceTheFirstByteTimeoutPlusThreeSeconds() {
    // W3: default: twice the upstream first-byte timeout plus 3 s.
    assertEquals(Duration.ofSeconds(23), FetchPolicy.defaultBudget(Duration.ofSeconds(10)));
  }

  @Test
  void w4_anExceptionThrownByTheUpstreamClientFailsTheWaiterPromptly() {
    // W4: However the fetch ends (an exception or bug in the fetch code) every waiter gets a definite answer.
    String u = url("throws");
    ArtifactKey key = ArtifactKey.of("r", u);
    upstream.on(u, r -> {
      throw new IllegalStateException("a bug in the upstream client");
    });
    assertEquals(Failure.INTERNAL, reply(ask(key), Reply.Failed.class).cause());

    upstream.serve(u, ByteString.fromString("works again"));
    assertEquals("works again", reply(ask(key), Reply.Body.class).bytes().utf8String());
  }

  @Test
  void w4_anErrorThrownByTheUpstreamClientFailsTheWaiterPromptly() {
    // W4: However the fetch ends (an exception or bug in the fetch code) every waiter gets a definite answer.
    String u = url("asserts");
    // A budget far beyond WAIT: a stranded waiter would surface as a missing answer, not a 504.
    ArtifactKey key = ArtifactKey.of(repo(withBudget(Duration.ofMinutes(5))), u);
    upstream.on(u, r -> {
      throw new AssertionError("a failed assertion in the upstream client");
    });
    assertEquals(Failure.INTERNAL, reply(ask(key), Reply.Failed.class).cause());

    upstream.serve(u, ByteString.fromString("works again"));
    assertEquals("works again", reply(ask(key), Reply.Body.class).bytes().utf8String());
  }

  @Test
  void w4_anUnexpectedFailureOfTheUpstreamFutureFailsEveryWaiter() {
    // W4: However the fetch ends (an exception or bug in the fetch code) every waiter gets a definite answer.
    String u = url("unexpected");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 4);
    barrier(key);
    gate.completeExceptionally(new NullPointerException("a bug"));
    answers.forEach(a -> assertEquals(Failure.INTERNAL, reply(a, Reply.Failed.class).cause()));
  }

  @Test
  void w4_aBodyThatFailsWithAnUnexpectedExceptionFailsEveryWaiter() {
    // W4: However the fetch ends (an exception or bug in the fetch code) every waiter gets a definite answer.
    String u = url("body-bug");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 4);
    barrier(key);
    gate.complete(ScriptedUpstream.of(200,
        Source.single(ByteString.fromString("half")).concat(Source.failed(new IllegalStateException("bug"))),
        OptionalLong.of(8)));
    answers.forEach(a -> assertEquals(Failure.INTERNAL, reply(a, Reply.Failed.class).cause()));
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void w4_aCommitThatThrowsFailsEveryWaiter() {
    // W4: However the fetch ends (an exception or bug in the fetch code) every waiter gets a definite answer.
    String u = url("commit-bug");
    ArtifactKey key = ArtifactKey.of("r", u);
    store.brokenCommits.add(key.id());
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 4);
    barrier(key);
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("never committed")));
    answers.forEach(a -> assertEquals(Failure.INTERNAL, reply(a, Reply.Failed.class).cause()));
    assertTrue(node.store().lookup(key).isEmpty());
  }
}
