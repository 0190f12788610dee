package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.download.Failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.BlobWriter;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS F1-F4: one fetch per key, the leader's re-check of the store, commit before release. */
class CoalescingTest extends EntityTestBase {

  @Test
  void f1_thirtyTwoConcurrentCallersShareOneFetch() throws Exception {
    // F1: However many requests arrive for a key at once, the upstream sees one fetch.
    String u = url("herd");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    int callers = 32;
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(callers);
    List<Future<CompletableFuture<Waiters.Answer>>> asked = new ArrayList<>();
    try {
      for (int i = 0; i < callers; i++) {
        asked.add(pool.submit(() -> {
          start.await();
          return ask(key);
        }));
      }
      start.countDown();
      List<CompletableFuture<Waiters.Answer>> answers = new ArrayList<>();
      for (var a : asked) {
        answers.add(a.get());
      }
      barrier(key); // every Join has reached the entity: all of them wait on the one fetch
      assertEquals(1, upstream.count(u));
      ByteString body = ByteString.fromString("one fetch for everybody");
      gate.complete(ScriptedUpstream.ok(body));

      int misses = 0;
      for (var a : answers) {
        Reply.Body b = reply(a, Reply.Body.class);
        assertEquals(body, b.bytes());
        misses += b.via() == Via.MISS ? 1 : 0;
      }
      assertEquals(1, misses, "exactly one waiter led the fetch");
      assertEquals(1, upstream.count(u), "upstream requests");
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void f2_theLeaderRechecksTheStoreBeforeFetching() throws Exception {
    // F2: The leader re-checks the store before fetching: if another path committed the artifact in the gap, it is served.
    String u = url("committed-elsewhere");
    ArtifactKey key = ArtifactKey.of("r", u);
    ByteString bytes = ByteString.fromString("committed by another path");
    StoredArtifact committed = commitDirectly(key, bytes);

    Reply.Stored hit = reply(ask(key), Reply.Stored.class);
    assertEquals(Via.HIT, hit.via());
    assertEquals(committed.sha256(), hit.artifact().sha256());
    assertEquals(bytes, node.store().readAll(hit.artifact()));
    assertEquals(0, upstream.count(u));
  }

  @Test
  void f2_aRecordWhoseBytesVanishedIsFetchedAgain() throws Exception {
    // F2: A record whose bytes are missing or corrupt is fetched again, never served.
    String u = url("vanished");
    ArtifactKey key = ArtifactKey.of("r", u);
    StoredArtifact committed = commitDirectly(key, ByteString.fromString("bytes that will vanish"));
    Files.delete(blobFile(committed.sha256()));
    ByteString fresh = ByteString.fromString("fresh bytes from upstream");
    upstream.serve(u, fresh);

    Reply.Body body = reply(ask(key), Reply.Body.class);
    assertEquals(Via.MISS, body.via());
    assertEquals(fresh, body.bytes());
    assertEquals(1, upstream.count(u));
  }

  @Test
  void f2_aRecordWhoseBytesAreTruncatedIsFetchedAgain() throws Exception {
    // F2: A record whose bytes are missing or corrupt is fetched again, never served.
    String u = url("truncated");
    ArtifactKey key = ArtifactKey.of("r", u);
    StoredArtifact committed = commitDirectly(key, ByteString.fromString("bytes that will be cut short"));
    try (FileChannel ch = FileChannel.open(blobFile(committed.sha256()), StandardOpenOption.WRITE)) {
      ch.truncate(5);
    }
    ByteString fresh = ByteString.fromString("whole bytes from upstream");
    upstream.serve(u, fresh);

    assertEquals(fresh, reply(ask(key), Reply.Body.class).bytes());
    assertEquals(1, upstream.count(u));
  }

  @Test
  void f3_aRequestAfterTheFetchIsACacheHit() {
    // F3: The artifact is committed to the store before the key is released, so a request that arrives after the fetch is a cache hit.
    String u = url("then-hit");
    ArtifactKey key = ArtifactKey.of("r", u);
    ByteString bytes = ByteString.fromString("committed before anybody is answered");
    upstream.serve(u, bytes);

    // Looked up the moment the waiter is answered, on the thread that completes its answer.
    CompletableFuture<Optional<StoredArtifact>> storedWhenAnswered =
        ask(key).thenApply(a -> node.store().lookup(key));
    assertTrue(storedWhenAnswered.join().isPresent(), "committed when the waiter was answered");

    Reply.Stored hit = reply(ask(key), Reply.Stored.class);
    assertEquals(Via.HIT, hit.via());
    assertEquals(1, upstream.count(u));
  }

  @Test
  void f4_afterTheFetchANewMissStartsANewFetch() throws IOException {
    // F4: After the fetch ends the entity holds no in-flight state: a later miss (for example after a purge) starts a new fetch.
    String repo = repo();
    String u = url("purged");
    ArtifactKey key = ArtifactKey.of(repo, u);
    upstream.serve(u, ByteString.fromString("first"));
    assertEquals(Via.MISS, reply(ask(key), Reply.Body.class).via());
    assertEquals(0.0, inflight(repo));

    assertTrue(node.store().remove(key));
    upstream.serve(u, ByteString.fromString("second"));
    Reply.Body again = reply(ask(key), Reply.Body.class);
    assertEquals(Via.MISS, again.via());
    assertEquals("second", again.bytes().utf8String());
    assertEquals(2, upstream.count(u));
    assertEquals(0.0, inflight(repo));
  }

  @Test
  void f4_waiterBookkeepingIsBounded() {
    // F4: Bookkeeping for waiters and cancellations is bounded.
    String repo = repo(withMaxWaiters(4));
    String u = url("crowded");
    ArtifactKey key = ArtifactKey.of(repo, u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> held = ask(key, 4);
    CompletableFuture<Waiters.Answer> refused = ask(key);
    assertEquals(Failure.TOO_MANY_WAITERS, reply(refused, Reply.Failed.class).cause());
    assertFalse(held.stream().anyMatch(CompletableFuture::isDone));

    ByteString body = ByteString.fromString("for the four");
    gate.complete(ScriptedUpstream.ok(body));
    for (var a : held) {
      assertEquals(body, reply(a, Reply.Body.class).bytes());
    }
    // Every finished wait gave its cancel token back.
    awaitAssert(() -> assertEquals(0, waiters.cancels().registrations()));
    assertEquals(1, upstream.count(u));
  }

  private StoredArtifact commitDirectly(ArtifactKey key, ByteString bytes) throws IOException {
    BlobWriter writer = node.store().newBlob(null);
    writer.write(bytes);
    return node.store().commit(key, writer, List.of());
  }

  private Path blobFile(String sha256) throws IOException {
    try (Stream<Path> files = Files.walk(dataDir.resolve("blobs"))) {
      return files.filter(p -> p.getFileName().toString().startsWith(sha256)).findFirst()
          .orElseThrow(() -> new UncheckedIOException(new IOException("no blob file " + sha256)));
    }
  }
}
