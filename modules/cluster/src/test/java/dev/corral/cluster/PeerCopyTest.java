package dev.corral.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.corral.core.download.Outcome;
import dev.corral.core.fetch.Peers;
import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A copy of one blob from its holders (SEMANTICS L3, B2 across nodes): the holders asked in
 * order, a transfer that breaks mid-body resumed with a Range request where it broke (the same
 * holder first, then the next), and a rest that cannot be had fails the body, never ends it short.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PeerCopyTest {
  private static final byte[] BODY = new byte[300_000];
  private static final String PATH = "/-/peer/blobs/" + "a".repeat(64);

  static {
    new Random(7).nextBytes(BODY);
  }

  private final ActorTestKit kit = ActorTestKit.create("PeerCopyTest");
  /** What each fake holder does; records every (holder, offset) asked, and the path of each ask. */
  private final Map<String, Holder> holders = new ConcurrentHashMap<>();
  private final List<String> asked = new CopyOnWriteArrayList<>();
  private final List<String> paths = new CopyOnWriteArrayList<>();

  private interface Holder {
    CompletionStage<UpstreamResponse> get(long offset);
  }

  // Records only: an assertion failing here would run inside the copy's stream and fail the body,
  // which some tests expect anyway. The tests check the paths on their own thread.
  private final PeerBlobs client = (peerUrl, path, offset) -> {
    paths.add(path);
    asked.add(peerUrl + "@" + offset);
    Holder h = holders.get(peerUrl);
    return h == null ? CompletableFuture.failedFuture(new IOException("connection refused")) : h.get(offset);
  };

  @AfterAll
  void stop() {
    kit.shutdownTestKit();
  }

  @BeforeEach
  void nothingAskedYet() {
    asked.clear();
    paths.clear();
  }

  /** Every holder was asked for the blob's path, and only for it (first bytes and resumes alike). */
  private void assertOnlyTheBlobsPathAsked() {
    assertFalse(paths.isEmpty(), "nothing asked");
    assertEquals(Collections.nCopies(paths.size(), PATH), paths);
  }

  /** Serves the body from the offset asked; a transfer starting before {@code breakAt} breaks there. */
  private static Holder serving(long breakAt) {
    return offset -> {
      int from = (int) offset;
      int to = from < breakAt ? (int) Math.min(BODY.length, breakAt) : BODY.length;
      Source<ByteString, NotUsed> body = Source.single(ByteString.fromArray(BODY, from, to - from));
      if (to < BODY.length) {
        // Lazy: concat fails at once when its second input is an already failed source.
        body = body.concat(Source.lazySource(() -> Source.<ByteString>failed(new IOException("connection reset")))
            .mapMaterializedValue(m -> NotUsed.getInstance()));
      }
      List<Header> headers = offset == 0 ? List.of()
          : List.of(new Header("Content-Range", "bytes " + offset + "-" + (BODY.length - 1) + "/" + BODY.length));
      return CompletableFuture.completedFuture(
          new UpstreamResponse(offset == 0 ? 200 : 206, headers, OptionalLong.of(BODY.length - offset), body));
    };
  }

  /** Reads the copy whole. */
  private ByteString copy(List<String> from) throws Exception {
    UpstreamResponse r = new PeerCopy(client, from, PATH, kit.system())
        .get(new UpstreamRequest("r", "http://upstream.example/a", List.of()))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(200, r.status());
    assertEquals(BODY.length, r.contentLength().getAsLong());
    return r.body().runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), kit.system())
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  @Test
  void aBrokenTransferResumesWhereItBroke() throws Exception {
    holders.put("http://127.0.0.1:11", serving(100_000)); // breaks once at 100 000, then serves the rest
    assertEquals(ByteString.fromArray(BODY), copy(List.of("http://127.0.0.1:11")));
    assertEquals(List.of("http://127.0.0.1:11@0", "http://127.0.0.1:11@100000"), asked);
    assertOnlyTheBlobsPathAsked();
  }

  @Test
  void aHolderThatCannotResumeIsFollowedByTheNextHolder() throws Exception {
    // h12 breaks at 50 000 and then refuses (gone); h13 gives the rest.
    holders.put("http://127.0.0.1:12", offset -> offset == 0 ? serving(50_000).get(0)
        : CompletableFuture.failedFuture(new IOException("connection refused")));
    holders.put("http://127.0.0.1:13", serving(BODY.length));
    assertEquals(ByteString.fromArray(BODY), copy(List.of("http://127.0.0.1:12", "http://127.0.0.1:13")));
    assertEquals(List.of("http://127.0.0.1:12@0", "http://127.0.0.1:12@50000", "http://127.0.0.1:13@50000"), asked);
    assertOnlyTheBlobsPathAsked();
  }

  @Test
  void aRestThatCannotBeHadFailsTheBody() {
    holders.put("http://127.0.0.1:14", offset -> offset == 0 ? serving(1000).get(0)
        : CompletableFuture.completedFuture(new UpstreamResponse(404, List.of(), OptionalLong.of(0), Source.empty())));
    ExecutionException failed = assertThrows(ExecutionException.class, () -> copy(List.of("http://127.0.0.1:14")));
    // The body fails because the rest could not be had (the 404 to the Range request), not for
    // another reason such as an assertion of the fake.
    IOException cause = assertInstanceOf(IOException.class, failed.getCause());
    assertEquals("holder http://127.0.0.1:14 cannot resume at 1000 (status 404)", cause.getMessage());
    assertEquals(List.of("http://127.0.0.1:14@0", "http://127.0.0.1:14@1000"), asked,
        "the first bytes, then the rest from the byte where the transfer broke, once");
    assertOnlyTheBlobsPathAsked();
  }

  @Test
  void theFirstHolderThatAnswersGivesTheBytesAndNoneAnsweringFails() throws Exception {
    holders.put("http://127.0.0.1:16", offset ->
        CompletableFuture.completedFuture(new UpstreamResponse(404, List.of(), OptionalLong.of(0), Source.empty())));
    holders.put("http://127.0.0.1:17", serving(BODY.length));
    assertEquals(ByteString.fromArray(BODY), copy(List.of("http://127.0.0.1:15", "http://127.0.0.1:16", "http://127.0.0.1:17")));
    assertEquals(List.of("http://127.0.0.1:15@0", "http://127.0.0.1:16@0", "http://127.0.0.1:17@0"), asked);
    assertOnlyTheBlobsPathAsked();
    ExecutionException none = assertThrows(ExecutionException.class, () -> new PeerCopy(client,
        List.of("http://127.0.0.1:21", "http://127.0.0.1:16"), PATH, kit.system())
        .get(new UpstreamRequest("r", "http://upstream.example/a", List.of())).toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertEquals(IOException.class, none.getCause().getClass());
    assertOnlyTheBlobsPathAsked();
  }

  @Test
  void itNamesTheHoldersItAskedSoThatAFailedCopyDropsThemAndNoOther() throws Exception {
    // Issue 13 item 4: the entity drops from the key's record exactly the holders a failed copy
    // asked, for the first bytes or to resume, and goes on to the others.
    holders.put("http://127.0.0.1:31", offset -> offset == 0 ? serving(1000).get(0)
        : CompletableFuture.failedFuture(new IOException("connection refused")));
    PeerCopy failing = new PeerCopy(client,
        List.of("http://127.0.0.1:30", "http://127.0.0.1:31", "http://127.0.0.1:32"), PATH, kit.system());
    UpstreamResponse r = failing.get(new UpstreamRequest("r", "http://upstream.example/a", List.of()))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertThrows(ExecutionException.class, () -> r.body()
        .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), kit.system())
        .toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertEquals(List.of("http://127.0.0.1:30", "http://127.0.0.1:31", "http://127.0.0.1:32"), failing.asked(),
        "refused the first bytes; broke and could not resume; asked to resume");
    assertEquals(List.of("http://127.0.0.1:30@0", "http://127.0.0.1:31@0", "http://127.0.0.1:31@1000",
        "http://127.0.0.1:32@1000", "http://127.0.0.1:30@1000"), asked, "the rest asked of each holder once, in turn");
    assertOnlyTheBlobsPathAsked();

    holders.put("http://127.0.0.1:33", serving(BODY.length));
    PeerCopy whole = new PeerCopy(client, List.of("http://127.0.0.1:33", "http://127.0.0.1:34"), PATH, kit.system());
    UpstreamResponse ok = whole.get(new UpstreamRequest("r", "http://upstream.example/a", List.of()))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    ok.body().runWith(Sink.ignore(), kit.system()).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(List.of("http://127.0.0.1:33"), whole.asked(), "a holder never asked is never blamed");
    assertOnlyTheBlobsPathAsked();
  }

  @Test
  void aCopyOfAnotherNodesHitThatBreaksResumesFromAHolderTheEntityAlsoNamed() throws Exception {
    // Issue 13 item 4: resume after a break may come from any holder, not only the one named.
    // The entity's node (h40) answers a hit for a waiter elsewhere, naming h41 as another holder
    // it knows; h40's transfer breaks at 70 000 and h40 is gone; h41 gives the rest.
    holders.put("http://127.0.0.1:40", offset -> offset == 0 ? serving(70_000).get(0)
        : CompletableFuture.failedFuture(new IOException("connection refused")));
    holders.put("http://127.0.0.1:41", serving(BODY.length));
    StoredArtifact held = new StoredArtifact("k".repeat(64), "r|http://upstream.example/a", "a".repeat(64),
        BODY.length, List.of(), 1234L);
    Reply reply = CrossNodeReplies.encode(new Outcome.Stored(held), Via.HIT, "http://127.0.0.1:40", 1024,
        List.of("http://127.0.0.1:41"));
    Peers.Arrival.Copy arrival = (Peers.Arrival.Copy) CrossNodeReplies.decode((Reply.ForAnotherNode) reply,
        (from, path) -> new PeerCopy(client, from, path, kit.system()));
    UpstreamResponse r = arrival.source().get(new UpstreamRequest("r", "http://upstream.example/a", List.of()))
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(ByteString.fromArray(BODY), r.body()
        .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), kit.system())
        .toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertEquals(List.of("http://127.0.0.1:40@0", "http://127.0.0.1:40@70000", "http://127.0.0.1:41@70000"), asked);
    assertOnlyTheBlobsPathAsked();
  }
}
