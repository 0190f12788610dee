package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.download.Failure;
import dev.corral.core.download.GrowingBlob;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.UpstreamResponse;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS B1-B3: verified bytes only, truncation never looks complete, shared small bodies, independent readers. */
class BytesTest extends EntityTestBase {
  private static final int LARGE = 64 * 1024;

  @Test
  void b1_aDigestMismatchFailsEveryWaiterAndStoresNothing() {
    // B1: A known expected digest that does not match means nothing is stored or served: every waiter gets a 502.
    String u = url("tampered");
    ArtifactKey key = new ArtifactKey("r", u, "", digest("SHA-256", ByteString.fromString("the real bytes")));
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("tampered bytes")));
    answers.forEach(a -> assertEquals(Failure.BAD_BYTES, reply(a, Reply.Failed.class).cause()));
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void b1_aDigestTheFetchLearnsVerifiesTheBytesBeforeCommit() {
    // K1/B1: a key without a digest whose FetchSources names one: the fetch asks the URL it names
    // and commits only bytes that match; the key stays the same whatever the answer.
    String u = url("learned");
    String elsewhere = url("learned-elsewhere");
    ByteString real = ByteString.fromString("the real bytes");
    ArtifactKey key = ArtifactKey.of("r", u);
    node.downloads().use(k -> CompletableFuture.completedFuture(k.equals(key)
        ? new dev.corral.core.download.FetchSource(elsewhere, digest("SHA-512", real)) : new dev.corral.core.download.FetchSource(k.url(), k.expected())));
    try {
      upstream.serve(elsewhere, ByteString.fromString("tampered bytes"));
      assertEquals(Failure.BAD_BYTES, reply(ask(key), Reply.Failed.class).cause());
      assertTrue(node.store().lookup(key).isEmpty());
      upstream.serve(elsewhere, real);
      assertEquals(real, reply(ask(key), Reply.Body.class).bytes());
      assertTrue(node.store().lookup(key).isPresent());
      assertEquals(List.of(), upstream.requests(u), "the key's own URL was never asked");
    } finally {
      node.downloads().use(dev.corral.core.download.FetchSources.AS_KEYED);
    }
  }

  @Test
  void b1_aFetchThatCannotLearnItsDigestFailsAndNeverAsksTheUpstream() {
    // B1: when what the digest is learned from cannot be read, nothing unverified is committed.
    String u = url("unlearnable");
    ArtifactKey key = ArtifactKey.of("r", u);
    upstream.serve(u, ByteString.fromString("bytes nobody can vouch for"));
    node.downloads().use(k -> CompletableFuture.failedFuture(
        new dev.corral.core.download.FetchSources.Unavailable("the packument's upstream is down", false)));
    try {
      Reply.Failed failed = reply(ask(key), Reply.Failed.class);
      assertEquals(Failure.UPSTREAM_ERROR, failed.cause());
      assertTrue(failed.reason().contains("the packument's upstream is down"), failed.reason());
      assertTrue(node.store().lookup(key).isEmpty());
      assertEquals(List.of(), upstream.requests(u));
      node.downloads().use(k -> CompletableFuture.failedFuture(new java.util.concurrent.TimeoutException("slow")));
      assertEquals(Failure.UPSTREAM_TIMEOUT, reply(ask(key), Reply.Failed.class).cause());
      node.downloads().use(k -> {
        throw new IllegalStateException("a bug in the SPI");
      });
      assertEquals(Failure.UPSTREAM_ERROR, reply(ask(key), Reply.Failed.class).cause());
      assertEquals(List.of(), upstream.requests(u));
    } finally {
      node.downloads().use(dev.corral.core.download.FetchSources.AS_KEYED);
    }
  }

  @Test
  void b1_aMatchingSha256IsStored() throws Exception {
    // B1: Bytes are hashed while they stream in (a matching expected digest is stored and served).
    ByteString bytes = ByteString.fromString("bytes with a known sha256");
    assertVerifiedAndStored(digest("SHA-256", bytes), bytes);
  }

  @Test
  void b1_aMatchingSha512IsStored() throws Exception {
    // B1: Bytes are hashed while they stream in (a matching expected digest is stored and served).
    ByteString bytes = ByteString.fromString("bytes with a known sha512");
    assertVerifiedAndStored(digest("SHA-512", bytes), bytes);
  }

  @Test
  void b1_aLargeBodyWithAMismatchedDigestFailsEveryReader() throws Exception {
    // B1: A known expected digest that does not match means nothing is stored or served.
    String repo = repo(withInlineLimit(1024));
    String u = url("large-tampered");
    ByteString body = bytes(LARGE, 1);
    ArtifactKey key = new ArtifactKey(repo, u, "", digest("SHA-256", bytes(LARGE, 2)));
    HeldBody held = new HeldBody(body);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response()));
    Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
    List<Reader> readers = List.of(read(streaming), read(streaming), read(streaming));
    for (Reader reader : readers) {
      awaitAssert(() -> assertEquals(LARGE - 1, reader.received.get()));
    }
    held.end();
    for (Reader reader : readers) {
      assertReaderFails(reader, "digest mismatch");
      assertEquals(LARGE - 1, reader.received.get(), "the last byte was never delivered");
    }
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void b2_aTruncatedSmallBodyIsNeverStoredNorServed() {
    // B2: A truncated upstream body (a reset connection) is never stored and never served as complete.
    String u = url("reset");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    barrier(key);
    gate.complete(ScriptedUpstream.of(200,
        Source.single(ByteString.fromString("first half"))
            .concat(Source.failed(new java.io.IOException("connection reset"))),
        OptionalLong.of(20)));
    answers.forEach(a -> assertEquals(Failure.UPSTREAM_ERROR, reply(a, Reply.Failed.class).cause()));
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void b2_aSmallBodyShorterThanItsContentLengthIsNeverStored() {
    // B2: A truncated upstream body (short of its Content-Length) is never stored and never served as complete.
    String u = url("short");
    ArtifactKey key = ArtifactKey.of("r", u);
    upstream.on(u, r -> CompletableFuture.completedFuture(ScriptedUpstream.of(200,
        Source.single(ByteString.fromString("only part")), OptionalLong.of(100))));
    assertEquals(Failure.UPSTREAM_ERROR, reply(ask(key), Reply.Failed.class).cause());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void b2_aLargeBodyStreamsToWaitersWhileItDownloadsAndItsLastByteWaitsForVerification() throws Exception {
    // B2: Larger bodies may stream to waiters while they download, with the exact Content-Length.
    String repo = repo(withInlineLimit(1024));
    String u = url("large");
    ArtifactKey key = ArtifactKey.of(repo, u);
    ByteString body = bytes(LARGE, 3);
    HeldBody held = new HeldBody(body);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response()));

    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 3);
    Reply.Streaming first = reply(answers.get(0), Reply.Streaming.class);
    assertEquals(LARGE, first.length());
    for (var a : answers) {
      assertEquals(first.downloadId(), reply(a, Reply.Streaming.class).downloadId());
    }
    Reader one = read(first);
    Reader two = read(first);
    // Every byte has arrived from upstream, but the download is not over: the last byte waits.
    awaitAssert(() -> assertEquals(LARGE - 1, one.received.get()));
    awaitAssert(() -> assertEquals(LARGE - 1, two.received.get()));
    assertFalse(one.all.isDone());

    held.end();
    assertEquals(body, one.all.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    assertEquals(body, two.all.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    awaitAssert(() -> assertTrue(node.store().lookup(key).isPresent()));
    assertEquals(1, upstream.count(u));
  }

  @Test
  void b2_aLargeDownloadThatCommittedIsStillReadByItsIdFromAnOffsetForALateCopy() throws Exception {
    // Issue 17: a node told to resume its copy from this download may ask after it ended.
    String repo = repo(withInlineLimit(1024));
    String u = url("large-late");
    ArtifactKey key = ArtifactKey.of(repo, u);
    ByteString body = bytes(LARGE, 5);
    HeldBody held = new HeldBody(body);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response()));

    Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
    held.end();
    // A hit: the fetch has ended (its download's end ran before the entity heard of it).
    awaitAssert(() -> reply(ask(key), Reply.Stored.class));
    var ended = node.downloads().find(streaming.downloadId());
    assertTrue(ended.isPresent(), "findable by its id after it committed");
    ByteString rest = ended.get().reader(LARGE / 3)
        .runFold(ByteString.emptyByteString(), ByteString::concat, kit.system())
        .toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    assertEquals(body.drop(LARGE / 3), rest, "the committed bytes from the offset");
  }

  @Test
  void b2_aLargeDownloadThatFailsMidwayFailsEveryReader() throws Exception {
    // B2: if the download fails, those connections are aborted, never ended as if complete.
    String repo = repo(withInlineLimit(1024));
    String u = url("large-reset");
    ArtifactKey key = ArtifactKey.of(repo, u);
    ByteString half = bytes(LARGE / 2, 4);
    HeldBody held = new HeldBody(half);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response(LARGE)));

    Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
    assertEquals(LARGE, streaming.length());
    Reader one = read(streaming);
    Reader two = read(streaming);
    awaitAssert(() -> assertEquals(LARGE / 2, one.received.get()));
    held.fail(new java.io.IOException("connection reset"));
    assertReaderFails(one, "connection reset");
    assertReaderFails(two, "connection reset");
    assertEquals(LARGE / 2, one.received.get());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void b3_smallBodiesAreOneByteStringSharedByEveryWaiter() {
    // B3: Small bodies are one immutable ByteString shared by every waiter (no copy per waiter).
    String u = url("shared");
    ArtifactKey key = ArtifactKey.of("r", u);
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    List<CompletableFuture<Waiters.Answer>> answers = ask(key, 8);
    barrier(key);
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("one copy")));
    ByteString first = reply(answers.get(0), Reply.Body.class).bytes();
    assertEquals("one copy", first.utf8String());
    answers.forEach(a -> assertSame(first, reply(a, Reply.Body.class).bytes()));
  }

  @Test
  void b3_eachLargeBodyReaderIsIndependent() throws Exception {
    // B3: Each waiter gets its own response stream; one client closing early never affects another.
    String repo = repo(withInlineLimit(1024));
    String u = url("readers");
    ArtifactKey key = ArtifactKey.of(repo, u);
    ByteString body = bytes(4 * LARGE, 5);
    HeldBody held = new HeldBody(body);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response()));
    Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
    GrowingBlob blob = node.downloads().find(streaming.downloadId()).orElseThrow();

    // Two clients read at once; both have all but the last byte, which waits for the download's end.
    Reader stays = read(streaming);
    AtomicLong leavingGot = new AtomicLong();
    Pair<UniqueKillSwitch, CompletionStage<ByteString>> leaving = blob.reader()
        .map(b -> {
          leavingGot.addAndGet(b.size());
          return b;
        })
        .viaMat(KillSwitches.single(), Keep.right())
        .toMat(Sink.fold(ByteString.emptyByteString(), ByteString::concat), Keep.both())
        .run(kit.system());
    awaitAssert(() -> assertEquals(body.size() - 1, stays.received.get()));
    awaitAssert(() -> assertEquals(body.size() - 1, leavingGot.get()));
    assertEquals(3, blob.references(), "the writer and two readers hold the file");

    // One of them goes away part-way (its client closed the connection).
    leaving.first().abort(new java.io.IOException("client closed the connection"));
    assertThrows(ExecutionException.class,
        () -> leaving.second().toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    awaitAssert(() -> assertEquals(2, blob.references(), "only the reader that left let go of the file"));
    assertFalse(stays.all.isDone(), "the other reader is still open, waiting for the last byte");

    held.end();
    assertEquals(body, stays.all.get(WAIT.toMillis(), TimeUnit.MILLISECONDS), "the other gets the whole body");
  }

  @Test
  void b2_aReaderThatStartsAfterTheDownloadEndedReadsTheCommittedBytes() throws Exception {
    // B2/B3: a waiter told to stream a download that has meanwhile ended and let go of its file
    // still gets the exact, committed bytes, never an aborted stream.
    String repo = repo(withInlineLimit(1024));
    String u = url("late-reader");
    ArtifactKey key = ArtifactKey.of(repo, u);
    ByteString body = bytes(4 * LARGE, 9);
    HeldBody held = new HeldBody(body);
    upstream.on(u, r -> CompletableFuture.completedFuture(held.response()));
    Reply.Streaming streaming = reply(ask(key), Reply.Streaming.class);
    GrowingBlob blob = node.downloads().find(streaming.downloadId()).orElseThrow();
    held.end();
    awaitAssert(() -> assertEquals(0, blob.references()));

    ByteString late = blob.reader().runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), kit.system())
        .toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    assertEquals(body, late);
  }

  // ---- helpers --------------------------------------------------------------------------------

  private void assertVerifiedAndStored(Digest expected, ByteString bytes) throws Exception {
    String u = url("verified");
    ArtifactKey key = new ArtifactKey("r", u, "", expected);
    upstream.serve(u, bytes);
    assertEquals(bytes, reply(ask(key), Reply.Body.class).bytes());
    assertEquals(bytes, node.store().readAll(node.store().lookup(key).orElseThrow()));
  }

  /**
   * The reader's stream fails (its connection is aborted, B1/B2) with the download's own failure:
   * an IOException saying why ({@code GrowingBlob.fail}), not any other error nor an end.
   */
  private void assertReaderFails(Reader reader, String why) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> reader.all.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
    Throwable cause = e.getCause();
    assertInstanceOf(java.io.IOException.class, cause, "the download's failure");
    assertEquals(why, cause.getMessage());
  }

  /** A reader of a streaming download, counting what it has received so far. */
  private record Reader(AtomicLong received, CompletableFuture<ByteString> all) {}

  private Reader read(Reply.Streaming streaming) {
    GrowingBlob blob = node.downloads().find(streaming.downloadId()).orElseThrow();
    AtomicLong received = new AtomicLong();
    CompletableFuture<ByteString> all = blob.reader()
        .map(b -> {
          received.addAndGet(b.size());
          return b;
        })
        .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), kit.system())
        .toCompletableFuture();
    return new Reader(received, all);
  }

  /** An upstream body whose bytes all arrive at once but whose end (or failure) the test decides. */
  private static final class HeldBody {
    private final ByteString bytes;
    private final AtomicReference<CompletableFuture<java.util.Optional<ByteString>>> end = new AtomicReference<>();

    HeldBody(ByteString bytes) {
      this.bytes = bytes;
    }

    UpstreamResponse response() {
      return response(bytes.size());
    }

    /** A response announcing {@code contentLength}. */
    UpstreamResponse response(long contentLength) {
      Source<ByteString, NotUsed> rest = Source.<ByteString>maybe().mapMaterializedValue(p -> {
        end.set(p);
        return NotUsed.getInstance();
      });
      // in chunks, as a connection delivers them
      Source<ByteString, NotUsed> chunks = Source.range(0, (bytes.size() - 1) / 8192)
          .map(i -> bytes.slice(i * 8192, Math.min(bytes.size(), (i + 1) * 8192)));
      return ScriptedUpstream.of(200, chunks.concat(rest), OptionalLong.of(contentLength));
    }

    void end() {
      end.get().complete(java.util.Optional.empty());
    }

    void fail(Throwable cause) {
      end.get().completeExceptionally(cause);
    }
  }

  static Digest digest(String jca, ByteString bytes) {
    try {
      String hex = HexFormat.of().formatHex(MessageDigest.getInstance(jca).digest(bytes.toArray()));
      return new Digest(jca, hex);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
