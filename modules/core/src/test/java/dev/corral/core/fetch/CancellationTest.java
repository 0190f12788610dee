package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.GrowingBlob;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.UpstreamResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS C1-C3: a waiter leaving returns at once and never disturbs the fetch or the others. */
class CancellationTest extends EntityTestBase {

  @Test
  void c1_aCancelledWaiterReturnsAtOnceWhileTheSharedFetchContinues() {
    // C1: A waiter whose client closes its connection returns at once; it does not wait for the shared fetch.
    String u = url("cancel-one");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    long leaving = waiters.cancels().reserve();
    CompletableFuture<Waiters.Answer> gone = waiters.await(key, leaving).toCompletableFuture();
    List<CompletableFuture<Waiters.Answer>> staying = ask(key, 3);
    barrier(key);

    waiters.cancels().cancel(leaving);
    // Answered on the cancelling thread itself, before cancel() returned.
    assertTrue(gone.isDone());
    assertSame(Waiters.Cancelled.INSTANCE, gone.join());
    assertFalse(staying.stream().anyMatch(CompletableFuture::isDone));

    // C3: A waiter leaving never disturbs the others.
    ByteString body = ByteString.fromString("for those who stayed");
    gate.complete(ScriptedUpstream.ok(body));
    staying.forEach(a -> assertEquals(body, reply(a, Reply.Body.class).bytes()));
    assertEquals(1, upstream.count(u));
  }

  @Test
  void c2_aCancelledWaitersRegistrationIsRemovedFromTheEntity() {
    // C2: Its registration is removed (a cancel token travels with the waiter).
    String repo = repo(withMaxWaiters(2));
    String u = url("leave-frees-a-place");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    CompletableFuture<Waiters.Answer> first = ask(key);
    long leaving = waiters.cancels().reserve();
    waiters.await(key, leaving);
    waiters.cancels().cancel(leaving);
    // The entity holds at most 2 waiters: this one fits only if the cancelled one was removed.
    CompletableFuture<Waiters.Answer> late = ask(key);
    barrier(key);
    assertFalse(late.isDone(), "refused: the cancelled waiter still holds its place");

    gate.complete(ScriptedUpstream.ok(ByteString.fromString("x")));
    reply(first, Reply.Body.class);
    reply(late, Reply.Body.class);
    awaitAssert(() -> assertEquals(0, waiters.cancels().registrations()));
  }

  @Test
  void c2_aCancelBeforeTheRegistrationIsAnsweredCancelledAtOnce() {
    // C2: A cancel that arrives before the registration it cancels is remembered so the late registration is answered "cancelled" at once.
    String u = url("cancelled-early");
    ArtifactKey key = ArtifactKey.of("r", u);
    long token = waiters.cancels().reserve();
    waiters.cancels().cancel(token);

    CompletableFuture<Waiters.Answer> answer = waiters.await(key, token).toCompletableFuture();
    assertTrue(answer.isDone());
    assertSame(Waiters.Cancelled.INSTANCE, answer.join());
    barrier(key); // had a Join been sent, the entity would have processed it by now
    assertEquals(0, upstream.count(u), "the entity was never asked");
  }

  @Test
  void c3_theFetchIsCommittedEvenWhenEveryWaiterHasLeft() {
    // C3: The fetch runs to the end and is committed even when every waiter has left (the cache is warmed).
    String u = url("orphan");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<Long> tokens = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      long t = waiters.cancels().reserve();
      tokens.add(t);
      waiters.await(key, t);
    }
    tokens.forEach(waiters.cancels()::cancel);
    barrier(key); // every Leave has been processed: the fetch has no waiter left

    gate.complete(ScriptedUpstream.ok(ByteString.fromString("warm")));
    awaitAssert(() -> assertTrue(node.store().lookup(key).isPresent()));
    // An ask that reaches the entity before it has taken the fetch's end joins the fetch (its
    // body); once it has, the key is a hit. Either way, no second upstream request.
    awaitAssert(() -> assertEquals(Via.HIT, reply(ask(key), Reply.Stored.class).via()));
    assertEquals(1, upstream.count(u));
  }

  @Test
  void c3_withoutAFreeOrphanSlotAFetchEveryWaiterLeftIsAborted() {
    // C3: how many such waiter-less fetches may run per upstream is bounded.
    String repo = repo(withMaxOrphans(0));
    String u = url("orphan-aborted");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    long a = waiters.cancels().reserve();
    long b = waiters.cancels().reserve();
    waiters.await(key, a);
    waiters.await(key, b);
    waiters.cancels().cancel(a);
    waiters.cancels().cancel(b);
    barrier(key);

    gate.complete(ScriptedUpstream.ok(ByteString.fromString("nobody wants this")));
    awaitAssert(() -> assertEquals(0.0, inflight(repo), "the fetch ended"));
    assertTrue(node.store().lookup(key).isEmpty(), "an aborted fetch commits nothing");
  }

  @Test
  void c3_aRequestAfterAnAbortedFetchStartsAFreshOneInsteadOfJoiningIt() throws Exception {
    // C3 + W2: the aborted fetch is forgotten at once; a later request must not join it (it
    // would get the abort's 502, or wait out its budget), but fetch again.
    String repo = repo(withMaxOrphans(0));
    String u = url("after-abort");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.hold(u); // the first fetch never gets its headers
    long a = waiters.cancels().reserve();
    waiters.await(key, a);
    barrier(key);
    waiters.cancels().cancel(a);
    barrier(key);

    ByteString body = ByteString.fromString("fetched again");
    upstream.serve(u, body);
    assertEquals(body, reply(ask(key), Reply.Body.class).bytes());
    assertEquals(2, upstream.count(u));
  }

  @Test
  void c3_orphanSlotsAreBoundedAndGivenBack() {
    // C3: how many such waiter-less fetches may run per upstream is bounded.
    String repo = repo(withMaxOrphans(1));
    ArtifactKey first = ArtifactKey.of(repo, url("orphan-1"));
    ArtifactKey second = ArtifactKey.of(repo, url("orphan-2"));
    CompletableFuture<UpstreamResponse> gate1 = upstream.hold(first.url());
    CompletableFuture<UpstreamResponse> gate2 = upstream.hold(second.url());
    abandon(first);  // takes the one slot
    abandon(second); // finds none free: aborted
    gate1.complete(ScriptedUpstream.ok(ByteString.fromString("1")));
    gate2.complete(ScriptedUpstream.ok(ByteString.fromString("2")));
    awaitAssert(() -> assertEquals(0.0, inflight(repo)));
    assertTrue(node.store().lookup(first).isPresent());
    assertTrue(node.store().lookup(second).isEmpty());

    // The first fetch gave its slot back: the next waiter-less fetch may run to the end.
    ArtifactKey third = ArtifactKey.of(repo, url("orphan-3"));
    CompletableFuture<UpstreamResponse> gate3 = upstream.hold(third.url());
    abandon(third);
    gate3.complete(ScriptedUpstream.ok(ByteString.fromString("3")));
    awaitAssert(() -> assertTrue(node.store().lookup(third).isPresent()));
  }

  @Test
  void c3_twentyAbandonedLargeDownloadsWithALimitOfTwoLeaveTwoRunning() {
    // C3: how many waiter-less fetches may run per upstream is bounded; a large streaming
    // download whose readers all hung up is one of them.
    FetchPolicy d = FetchPolicy.defaults();
    String repo = repo(policy(1024, d.negativeTtl(), d.waiterBudget(), d.maxWaiters(), 2));
    int keys = 20;
    int size = 64 * 1024;
    List<ArtifactKey> abandoned = new ArrayList<>();
    List<BoundedSourceQueue<ByteString>> bodies = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      ArtifactKey key = ArtifactKey.of(repo, url("abandoned-large"));
      var body = Source.<ByteString>queue(4).preMaterialize(kit.system());
      upstream.on(key.url(), r -> CompletableFuture.completedFuture(
          ScriptedUpstream.of(200, body.second(), OptionalLong.of(size))));
      body.first().offer(bytes(1024, i)); // the first KiB; the rest never comes while the test looks
      bodies.add(body.first());
      abandoned.add(key);
      // A client streams the body, reads its first chunk and hangs up.
      Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
      node.downloads().find(streaming.downloadId()).orElseThrow().reader()
          .take(1).runWith(Sink.ignore(), kit.system()).toCompletableFuture().join();
    }
    awaitAssert(() -> assertEquals(2.0, inflight(repo), "downloads nobody reads, still running"));

    // The two that kept a slot run to the end and are committed; the others were aborted.
    for (int i = 0; i < keys; i++) {
      try {
        bodies.get(i).offer(bytes(size - 1024, 100 + i));
        bodies.get(i).complete();
      } catch (IllegalStateException aborted) {
        // the download was aborted: its body is no longer read
      }
    }
    awaitAssert(() -> assertEquals(0.0, inflight(repo)));
    assertEquals(2, abandoned.stream().filter(k -> node.store().lookup(k).isPresent()).count(), "committed");
  }

  @Test
  void c3_aStreamingDownloadStillReadByOneClientIsNoOrphan() {
    // C3: A waiter leaving never disturbs the others: one reader of two hanging up aborts nothing,
    // even with no orphan slot at all.
    FetchPolicy d = FetchPolicy.defaults();
    String repo = repo(policy(1024, d.negativeTtl(), d.waiterBudget(), d.maxWaiters(), 0));
    ArtifactKey key = ArtifactKey.of(repo, url("still-read"));
    int size = 64 * 1024;
    ByteString first = bytes(1024, 1);
    ByteString rest = bytes(size - 1024, 2);
    var body = Source.<ByteString>queue(4).preMaterialize(kit.system());
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(ScriptedUpstream.of(200, body.second(), OptionalLong.of(size))));
    body.first().offer(first);
    GrowingBlob blob = node.downloads().find(reply(ask(key), Reply.Streaming.class).downloadId()).orElseThrow();
    CompletableFuture<ByteString> staying = blob.reader().runFold(ByteString.emptyByteString(), ByteString::concat, kit.system())
        .toCompletableFuture();
    awaitAssert(() -> assertEquals(2, blob.references(), "the download's writer and the staying reader"));
    blob.reader().take(1).runWith(Sink.ignore(), kit.system()).toCompletableFuture().join();
    barrier(key);

    body.first().offer(rest);
    body.first().complete();
    assertEquals(first.concat(rest), staying.join());
    awaitAssert(() -> assertTrue(node.store().lookup(key).isPresent()));
  }

  /** One waiter asks for the key, its fetch starts, and it leaves. */
  private void abandon(ArtifactKey key) {
    long token = waiters.cancels().reserve();
    waiters.await(key, token);
    awaitRequests(key.url(), 1);
    waiters.cancels().cancel(token);
    barrier(key);
  }
}
