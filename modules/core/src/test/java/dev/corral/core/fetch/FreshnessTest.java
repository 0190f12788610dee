package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.download.Failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Variants and the freshness of mutable metadata (issue 4): a variant is the {@code Accept}
 * header sent upstream; a stale copy is served at once while exactly one conditional request
 * revalidates it (304 refreshes, 200 replaces, an error keeps the last good copy and says so,
 * 404 forgets it); immutable artifacts are never revalidated. Time moves through the test's
 * ticker and clock; nothing sleeps.
 */
class FreshnessTest extends EntityTestBase {
  private static final String ETAG = "\"v1\"";
  private static final String LAST_MODIFIED = "Tue, 01 Dec 2026 10:00:00 GMT";
  private static final Duration PAST_TTL = FetchPolicy.DEFAULT_METADATA_TTL.plusMinutes(1);

  // ---- variants -------------------------------------------------------------------------------

  @Test
  void theVariantIsSentUpstreamAsTheAcceptHeader() {
    String url = url("variant");
    ArtifactKey abbreviated = new ArtifactKey("r", url, "application/vnd.npm.install-v1+json", null);
    reply(ask(abbreviated), Reply.Body.class);
    List<UpstreamRequest> seen = upstream.requests(url);
    assertEquals(1, seen.size());
    assertEquals("application/vnd.npm.install-v1+json", header(seen.get(0), "Accept"));

    String plainUrl = url("no-variant");
    reply(ask(ArtifactKey.of("r", plainUrl)), Reply.Body.class);
    assertNull(header(upstream.requests(plainUrl).get(0), "Accept"), "no variant sends no Accept");
  }

  @Test
  void twoVariantsOfOneUrlAreTwoKeysAndTwoFetches() throws IOException {
    String url = url("two-variants");
    upstream.on(url, r -> CompletableFuture.completedFuture(
        response(200, "as " + header(r, "Accept"))));
    ArtifactKey json = new ArtifactKey("r", url, "application/json", null);
    ArtifactKey html = new ArtifactKey("r", url, "text/html", null);
    assertEquals("as application/json", reply(ask(json), Reply.Body.class).bytes().utf8String());
    assertEquals("as text/html", reply(ask(html), Reply.Body.class).bytes().utf8String());
    assertEquals(2, upstream.count(url));
    // Each variant is cached under its own key.
    Reply.Stored again = reply(ask(json), Reply.Stored.class);
    assertEquals(Via.HIT, again.via());
    assertEquals("as application/json", store.readAll(again.artifact()).utf8String());
    assertEquals(2, upstream.count(url));
  }

  // ---- freshness ------------------------------------------------------------------------------

  @Test
  void aFreshMutableCopyIsAHitWithoutAskingTheUpstream() {
    ArtifactKey key = key("fresh");
    assertEquals(Via.MISS, reply(askMutable(key), Reply.Body.class).via());
    ticker.advance(FetchPolicy.DEFAULT_METADATA_TTL.minusSeconds(10));
    assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via());
    assertEquals(1, upstream.count(key.url()));
  }

  @Test
  void aStaleCopyIsServedAtOnceWhileOneConditionalRequestRevalidatesIt() throws IOException {
    ArtifactKey key = cachedWithValidators("stale");
    CompletableFuture<UpstreamResponse> revalidation = upstream.hold(key.url());
    ticker.advance(PAST_TTL);

    // Answered while the revalidation is held upstream: stale-while-revalidate.
    Reply.Stale stale = reply(askMutable(key), Reply.Stale.class);
    assertFalse(stale.revalidationFailed());
    assertEquals("version 1", store.readAll(stale.artifact()).utf8String());
    awaitRequests(key.url(), 2);
    UpstreamRequest conditional = upstream.requests(key.url()).get(1);
    assertEquals(ETAG, header(conditional, "If-None-Match"));
    assertEquals(LAST_MODIFIED, header(conditional, "If-Modified-Since"));
    // More requests meanwhile are stale too and start nothing.
    reply(askMutable(key), Reply.Stale.class);
    assertEquals(2, upstream.count(key.url()));

    revalidation.complete(response(304, "", new Header("ETag", "\"v2\"")));
    awaitAssert(() -> assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via()));
    assertEquals(2, upstream.count(key.url()));
  }

  @Test
  void aNotModifiedRefreshesTheStoredCopyWithoutABody() throws IOException {
    ArtifactKey key = cachedWithValidators("not-modified");
    StoredArtifact before = store.lookup(key).orElseThrow();
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(
        response(304, "", new Header("ETag", "\"v2\""))));
    ticker.advance(PAST_TTL);
    long revalidatedAfter = ticker.clock().millis();

    reply(askMutable(key), Reply.Stale.class);
    awaitAssert(() -> assertTrue(store.lookup(key).orElseThrow().fetchedAtMillis() >= revalidatedAfter));
    StoredArtifact after = store.lookup(key).orElseThrow();
    assertEquals(before.sha256(), after.sha256(), "the same bytes");
    assertTrue(after.headers().contains(new Header("ETag", "\"v2\"")), after.headers().toString());
    assertTrue(after.headers().contains(new Header("Last-Modified", LAST_MODIFIED)));
    assertFalse(after.headers().contains(new Header("ETag", ETAG)));
    assertEquals("version 1", store.readAll(after).utf8String());
    // Fresh again for a whole TTL: the next revalidation sends the new validator.
    assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via());
    ticker.advance(PAST_TTL);
    reply(askMutable(key), Reply.Stale.class);
    awaitRequests(key.url(), 3);
    assertEquals("\"v2\"", header(upstream.requests(key.url()).get(2), "If-None-Match"));
  }

  @Test
  void aTwoHundredOnRevalidationReplacesTheCopy() throws IOException {
    ArtifactKey key = cachedWithValidators("replaced");
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(
        response(200, "version 2", new Header("ETag", "\"v2\""))));
    ticker.advance(PAST_TTL);

    assertEquals("version 1", store.readAll(reply(askMutable(key), Reply.Stale.class).artifact()).utf8String());
    awaitAssert(() -> assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via()));
    Reply.Stored hit = reply(askMutable(key), Reply.Stored.class);
    assertEquals("version 2", store.readAll(hit.artifact()).utf8String());
    assertEquals(2, upstream.count(key.url()));
  }

  @Test
  void anUpstreamErrorKeepsServingTheLastGoodCopyAndSaysSo() throws IOException {
    ArtifactKey key = cachedWithValidators("stale-if-error");
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(500, "down")));
    ticker.advance(PAST_TTL);

    assertFalse(reply(askMutable(key), Reply.Stale.class).revalidationFailed());
    awaitAssert(() -> assertTrue(reply(askMutable(key), Reply.Stale.class).revalidationFailed()));
    Reply.Stale lastGood = reply(askMutable(key), Reply.Stale.class);
    assertEquals("version 1", store.readAll(lastGood.artifact()).utf8String());
    // Within the pause after a failure, stale answers start no new revalidation.
    assertEquals(2, upstream.count(key.url()));

    // After the pause the next request revalidates again; a 304 ends the error state.
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(304, "")));
    ticker.advance(Freshness.REVALIDATION_RETRY.plusSeconds(1));
    assertTrue(reply(askMutable(key), Reply.Stale.class).revalidationFailed());
    awaitRequests(key.url(), 3);
    awaitAssert(() -> assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via()));
  }

  @Test
  void aCopyOlderThanMaxStaleWaitsForTheRevalidation() {
    FetchPolicy policy = FetchPolicy.defaults().withFreshness(Duration.ofMinutes(1), Duration.ofMinutes(1));
    ArtifactKey key = ArtifactKey.of(repo(policy), url("max-stale"));
    upstream.serve(key.url(), ByteString.fromString("v1"));
    reply(askMutable(key), Reply.Body.class);
    CompletableFuture<UpstreamResponse> revalidation = upstream.hold(key.url());
    ticker.advance(Duration.ofMinutes(3));

    CompletableFuture<Waiters.Answer> leader = askMutable(key);
    awaitRequests(key.url(), 2);
    CompletableFuture<Waiters.Answer> other = askMutable(key);
    barrier(key); // both Joins are registered (a purge changes nothing the flight needs)
    assertFalse(leader.isDone(), "a copy past max-stale is not served");
    revalidation.complete(response(304, ""));
    assertEquals(Via.REVALIDATED, reply(leader, Reply.Stored.class).via());
    assertEquals(Via.REVALIDATED, reply(other, Reply.Stored.class).via());
    assertEquals(2, upstream.count(key.url()));
  }

  @Test
  void anErrorPastMaxStaleIsAnError() {
    FetchPolicy policy = FetchPolicy.defaults().withFreshness(Duration.ofMinutes(1), Duration.ZERO);
    ArtifactKey key = ArtifactKey.of(repo(policy), url("past-max-stale-error"));
    upstream.serve(key.url(), ByteString.fromString("v1"));
    reply(askMutable(key), Reply.Body.class);
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(503, "down")));
    ticker.advance(Duration.ofMinutes(2));
    assertEquals(Failure.UPSTREAM_ERROR, reply(askMutable(key), Reply.Failed.class).cause());
  }

  @Test
  void goneOnRevalidationIsNotFoundRememberedAndNoLongerStored() {
    ArtifactKey key = cachedWithValidators("gone");
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(404, "")));
    ticker.advance(PAST_TTL);

    reply(askMutable(key), Reply.Stale.class);
    awaitAssert(() -> assertEquals(Via.NEGATIVE, reply(askMutable(key), Reply.NotFound.class).via()));
    assertTrue(store.lookup(key).isEmpty(), "the stale copy is removed");
    assertEquals(2, upstream.count(key.url()));
  }

  @Test
  void anImmutableArtifactIsNeverRevalidated() {
    ArtifactKey key = cachedWithValidators("immutable");
    ticker.advance(Duration.ofDays(30));
    assertEquals(Via.HIT, reply(ask(key), Reply.Stored.class).via());
    assertEquals(1, upstream.count(key.url()));
  }

  @Test
  void fiftyWaitersOnAStaleKeyMakeOneUpstreamRequest() {
    ArtifactKey key = cachedWithValidators("fifty");
    CompletableFuture<UpstreamResponse> revalidation = upstream.hold(key.url());
    ticker.advance(PAST_TTL);

    List<CompletableFuture<Waiters.Answer>> answers = new java.util.ArrayList<>();
    for (int i = 0; i < 50; i++) {
      answers.add(askMutable(key));
    }
    for (CompletableFuture<Waiters.Answer> a : answers) {
      reply(a, Reply.Stale.class); // all answered while the one revalidation is held
    }
    // The Stale answers go out before the revalidation's request leaves on the fetch's own thread.
    awaitAssert(() -> assertEquals(2, upstream.count(key.url())));
    revalidation.complete(response(304, ""));
    awaitAssert(() -> assertEquals(Via.HIT, reply(askMutable(key), Reply.Stored.class).via()));
    assertEquals(2, upstream.count(key.url()));
  }

  // ---- negative cache -------------------------------------------------------------------------

  @Test
  void theNegativeTtlIsPerRepository() {
    FetchPolicy d = FetchPolicy.defaults();
    ArtifactKey brief = ArtifactKey.of(repo(policy(d.inlineLimit(), Duration.ofSeconds(10), d.waiterBudget(),
        d.maxWaiters(), d.maxOrphanFetches())), url("negative-brief"));
    ArtifactKey longer = ArtifactKey.of(repo(policy(d.inlineLimit(), Duration.ofSeconds(60), d.waiterBudget(),
        d.maxWaiters(), d.maxOrphanFetches())), url("negative-long"));
    for (ArtifactKey key : List.of(brief, longer)) {
      upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(404, "")));
      assertEquals(Via.MISS, reply(ask(key), Reply.NotFound.class).via());
    }
    ticker.advance(Duration.ofSeconds(20));
    assertEquals(Via.MISS, reply(ask(brief), Reply.NotFound.class).via());
    assertEquals(Via.NEGATIVE, reply(ask(longer), Reply.NotFound.class).via());
    assertEquals(2, upstream.count(brief.url()));
    assertEquals(1, upstream.count(longer.url()));
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** A key of repository "r" whose "version 1" is cached, with an ETag and a Last-Modified. */
  private ArtifactKey cachedWithValidators(String name) {
    ArtifactKey key = key(name);
    upstream.on(key.url(), r -> CompletableFuture.completedFuture(response(200, "version 1",
        new Header("ETag", ETAG), new Header("Last-Modified", LAST_MODIFIED))));
    assertEquals(Via.MISS, reply(askMutable(key), Reply.Body.class).via());
    assertEquals(1, upstream.count(key.url()));
    return key;
  }

  private static UpstreamResponse response(int status, String body, Header... headers) {
    ByteString bytes = ByteString.fromString(body);
    return new UpstreamResponse(status, List.of(headers), OptionalLong.of(bytes.size()), Source.single(bytes));
  }

  private static String header(UpstreamRequest request, String name) {
    return request.headers().stream()
        .filter(h -> h.name().equalsIgnoreCase(name))
        .map(Header::value)
        .findFirst()
        .orElse(null);
  }
}
