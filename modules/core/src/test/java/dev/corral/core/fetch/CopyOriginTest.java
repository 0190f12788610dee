package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.Download;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * A download whose origin is other nodes' copy ({@link Download.Origin} with a source, as
 * {@link Peers#copy} makes it): verified against the recorded SHA-256 before anything is stored,
 * a body that breaks stores nothing, and a source that gives nothing is "ask again", never the
 * upstream, when the origin says so. (How the cluster's source resumes a broken transfer is the
 * cluster module's {@code PeerCopyTest}.)
 */
class CopyOriginTest extends EntityTestBase {
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

  private static Upstream giving(byte[] bytes, int breakAt) {
    return request -> {
      Source<ByteString, NotUsed> body = Source.single(ByteString.fromArray(bytes, 0, breakAt));
      if (breakAt < bytes.length) {
        // Lazy: concat fails at once when its second input is an already failed source.
        body = body.concat(Source.lazySource(() -> Source.<ByteString>failed(new IOException("connection reset")))
            .mapMaterializedValue(m -> NotUsed.getInstance()));
      }
      return CompletableFuture.completedFuture(new UpstreamResponse(200, List.of(), OptionalLong.of(bytes.length), body));
    };
  }

  private Outcome copy(ArtifactKey key, Upstream source) throws Exception {
    CompletableFuture<Outcome> done = new CompletableFuture<>();
    node.downloads().start(key, node.policy(key.repo()).inlineLimit(), null, kit.system(),
        new Download.Origin(source, SHA, List.of(new Header("Content-Type", "x/y")), false, -1),
        streaming -> {}, done::complete);
    return done.get(10, TimeUnit.SECONDS);
  }

  @Test
  void bytesThatMatchTheRecordedSha256AreStoredWithTheHoldersHeaders() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("whole"));
    assertInstanceOf(Outcome.Body.class, copy(key, giving(BODY, BODY.length)));
    assertEquals(SHA, node.store().lookup(key).orElseThrow().sha256());
    assertEquals(List.of(new Header("Content-Type", "x/y")), node.store().lookup(key).get().headers());
    assertEquals(ByteString.fromArray(BODY), node.store().readAll(node.store().lookup(key).get()));
  }

  @Test
  void aCopyThatCannotBeCompletedFailsAndStoresNothing() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("unfinished"));
    Outcome outcome = copy(key, giving(BODY, 1000));
    assertEquals(Failure.UPSTREAM_ERROR, assertInstanceOf(Outcome.Failed.class, outcome).cause());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void bytesThatDoNotMatchTheRecordedSha256AreNotStored() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("tampered"));
    byte[] other = BODY.clone();
    other[10] ^= 1;
    Outcome outcome = copy(key, giving(other, other.length));
    assertEquals(Failure.BAD_BYTES, assertInstanceOf(Outcome.Failed.class, outcome).cause());
    assertTrue(node.store().lookup(key).isEmpty());
  }

  @Test
  void noNodeGivingTheBytesIsUnavailableSoTheWaiterAsksAgain() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("nobody"));
    Outcome outcome = copy(key, request -> CompletableFuture.failedFuture(new IOException("no holder gave it")));
    assertInstanceOf(Reply.Retry.class, Reply.of(assertInstanceOf(Outcome.Unavailable.class, outcome), Via.PEER));
    assertTrue(node.store().lookup(key).isEmpty());
  }
}
