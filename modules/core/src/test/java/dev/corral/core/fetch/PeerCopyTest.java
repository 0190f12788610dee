package dev.corral.core.fetch;

import dev.corral.core.download.Download;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.download.PeerBlobs;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A copy of bytes from other nodes (Fetch with peers as its origin): verified against the recorded
 * SHA-256, and resumed with a Range request when a peer's transfer breaks mid-body.
 */
class PeerCopyTest extends EntityTestBase {
  private static final byte[] BODY = new byte[300_000];
  private static final String SHA;

  static {
    new Random(7).nextBytes(BODY);
    try {
      SHA = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(BODY));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** What each fake peer does; records every (peer, offset) asked. */
  private final Map<String, Peer> peers = new ConcurrentHashMap<>();
  private final List<String> asked = new CopyOnWriteArrayList<>();

  private interface Peer {
    CompletionStage<UpstreamResponse> get(long offset);
  }

  @BeforeAll
  void peering() {
    node.peering(new Node.Peering("http://127.0.0.1:1", (peerUrl, path, offset) -> {
      asked.add(peerUrl + "@" + offset);
      Peer p = peers.get(peerUrl);
      return p == null ? CompletableFuture.failedFuture(new IOException("connection refused")) : p.get(offset);
    }, 1 << 20));
  }

  /** Serves the body from the offset asked; a transfer starting before {@code breakAt} breaks there. */
  private static Peer serving(long breakAt) {
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

  private Outcome copy(ArtifactKey key, List<String> from) throws Exception {
    CompletableFuture<Outcome> done = new CompletableFuture<>();
    node.downloads().start(key, node.policy(key.repo()).inlineLimit(), null, kit.system(),
        new Download.Origin(node.peering().client(), from, PeerBlobs.blobPath(SHA), SHA,
            List.of(new Header("Content-Type", "x/y")), false),
        streaming -> {}, done::complete);
    return done.get(10, TimeUnit.SECONDS);
  }

  @Test
  void aBrokenTransferResumesWhereItBrokeAndTheWholeIsVerified() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("resumed"));
    peers.put("http://127.0.0.1:11", serving(100_000)); // breaks once at 100 000, then serves the rest
    Outcome outcome = copy(key, List.of("http://127.0.0.1:11"));
    assertInstanceOf(Outcome.Body.class, outcome);
    assertEquals(SHA, node.store().lookup(key).orElseThrow().sha256());
    assertEquals(ByteString.fromArray(BODY), node.store().readAll(node.store().lookup(key).get()));
    assertEquals(List.of("http://127.0.0.1:11@0", "http://127.0.0.1:11@100000"), asked.stream().filter(a -> a.startsWith("http://127.0.0.1:11")).toList());
  }

  @Test
  void aPeerThatCannotResumeIsFollowedByTheNextHolder() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("next-holder"));
    asked.clear();
    // p2 breaks at 50 000 and then refuses (gone); p3 gives the rest.
    peers.put("http://127.0.0.1:12", offset -> offset == 0 ? serving(50_000).get(0)
        : CompletableFuture.failedFuture(new IOException("connection refused")));
    peers.put("http://127.0.0.1:13", serving(BODY.length));
    Outcome outcome = copy(key, List.of("http://127.0.0.1:12", "http://127.0.0.1:13"));
    assertInstanceOf(Outcome.Body.class, outcome);
    assertEquals(SHA, node.store().lookup(key).orElseThrow().sha256());
    assertEquals(List.of("http://127.0.0.1:12@0", "http://127.0.0.1:12@50000", "http://127.0.0.1:13@50000"), asked);
  }

  @Test
  void aCopyThatCannotBeCompletedFailsAndStoresNothing() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("unfinished"));
    peers.put("http://127.0.0.1:14", offset -> offset == 0 ? serving(1000).get(0)
        : CompletableFuture.completedFuture(new UpstreamResponse(404, List.of(), OptionalLong.of(0), Source.empty())));
    Outcome outcome = copy(key, List.of("http://127.0.0.1:14"));
    assertEquals(Failure.UPSTREAM_ERROR, assertInstanceOf(Outcome.Failed.class, outcome).cause());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void bytesThatDoNotMatchTheRecordedSha256AreNotStored() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("tampered"));
    byte[] other = BODY.clone();
    other[10] ^= 1;
    peers.put("http://127.0.0.1:15", offset -> CompletableFuture.completedFuture(new UpstreamResponse(200, List.of(),
        OptionalLong.of(other.length), Source.single(ByteString.fromArray(other)))));
    Outcome outcome = copy(key, List.of("http://127.0.0.1:15"));
    assertEquals(Failure.BAD_BYTES, assertInstanceOf(Outcome.Failed.class, outcome).cause());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void noPeerGivingTheBytesIsUnavailableSoTheWaiterAsksAgain() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("nobody"));
    Outcome outcome = copy(key, List.of("http://127.0.0.1:21", "http://127.0.0.1:22"));
    assertInstanceOf(Reply.Retry.class, Reply.of(assertInstanceOf(Outcome.Unavailable.class, outcome), Via.PEER));
  }
}
