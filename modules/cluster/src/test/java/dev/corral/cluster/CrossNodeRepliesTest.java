package dev.corral.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.fetch.Peers;
import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.util.List;
import java.util.Random;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.Serialization;
import org.apache.pekko.serialization.SerializationExtension;
import org.apache.pekko.serialization.Serializers;
import org.apache.pekko.serialization.jackson.JacksonCborSerializer;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The replies for a waiter on another node: what the entity's node makes of each outcome, what
 * the waiter's node makes of it, and that both survive Pekko's serialization with their bytes.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class CrossNodeRepliesTest {
  private static final String SELF = "http://127.0.0.1:9";
  private static final List<Header> HEADERS = List.of(new Header("Content-Type", "application/x-test"));
  private ActorTestKit kit;
  private Serialization serialization;

  @BeforeAll
  void start() {
    kit = ActorTestKit.create("CrossNodeRepliesTest", ConfigFactory.parseString("""
        pekko.actor.provider = cluster
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.actor.serialization-bindings { "dev.corral.core.CborSerializable" = jackson-cbor }
        """).withFallback(ConfigFactory.load()));
    serialization = SerializationExtension.get(Adapter.toClassic(kit.system()));
  }

  @AfterAll
  void stop() {
    kit.shutdownTestKit();
  }

  private static ByteString random(int size) {
    byte[] b = new byte[size];
    new Random(size).nextBytes(b);
    return ByteString.fromArrayUnsafe(b);
  }

  private static StoredArtifact artifact(ByteString bytes) {
    return new StoredArtifact("k".repeat(64), "r|http://upstream.example/a", Sha256.hex(bytes),
        bytes.size(), HEADERS, 1234L);
  }

  private Object roundTrip(Object message) {
    var serializer = serialization.findSerializerFor(message);
    assertTrue(serializer instanceof JacksonCborSerializer, message.getClass() + " uses " + serializer);
    byte[] bytes = serialization.serialize(message).get();
    Object back = serialization.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, message)).get();
    assertEquals(message, back);
    return back;
  }

  @Test
  void aSmallBodyTravelsInsideTheReplyAndAHitThereIsPeer() {
    ByteString body = random(1000);
    Reply r = CrossNodeReplies.encode(new Outcome.Body(HEADERS, body, artifact(body)), Via.HIT, SELF, 1024, List.of());
    CrossNodeReplies.Inline in = assertInstanceOf(CrossNodeReplies.Inline.class, r);
    assertEquals(Via.PEER, in.via());
    assertEquals(1234L, in.fetchedAtMillis());
    Peers.Arrival.Body arrived = assertInstanceOf(Peers.Arrival.Body.class,
        CrossNodeReplies.decode((CrossNodeReplies.Inline) roundTrip(in), (url, path) -> null));
    assertEquals(new Reply.Body(Via.PEER, HEADERS, body), arrived.reply());
    assertEquals(1234L, arrived.fetchedAtMillis());
  }

  @Test
  void aLargerBodyIsReadFromTheHoldersBlobAndARunningDownloadFromTheDownload() {
    ByteString body = random(2000);
    Reply r = CrossNodeReplies.encode(new Outcome.Body(HEADERS, body, artifact(body)), Via.MISS, SELF, 1024, List.of());
    CrossNodeReplies.FromPeer from = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(r));
    assertEquals(Via.MISS, from.via());
    assertEquals("/-/peer/blobs/" + artifact(body).sha256(), from.path());
    String[] asked = new String[2];
    Peers.Arrival.Copy copy = assertInstanceOf(Peers.Arrival.Copy.class, CrossNodeReplies.decode(from, (urls, path) -> {
      asked[0] = String.join(",", urls);
      asked[1] = path;
      return null;
    }));
    assertArrayEquals(new String[] {SELF, "/-/peer/blobs/" + artifact(body).sha256()}, asked);
    assertEquals(artifact(body).sha256(), copy.sha256());
    assertEquals(1234L, copy.fetchedAtMillis());

    Reply streaming = CrossNodeReplies.encode(new Outcome.Streaming(HEADERS, 1L << 33, 17), Via.MISS, SELF, 1024, List.of());
    CrossNodeReplies.FromPeer growing = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(streaming));
    assertEquals("/-/peer/downloads/17", growing.path());
    Peers.Arrival.Copy copying = assertInstanceOf(Peers.Arrival.Copy.class, CrossNodeReplies.decode(growing, (u, p) -> null));
    assertNull(copying.sha256());
    assertEquals(-1, copying.fetchedAtMillis());
  }

  @Test
  void aPointerToCommittedBytesNamesTheOtherHoldersAndOneToARunningDownloadNone() {
    // Issue 13 item 4: a copy that breaks may resume from any holder the entity knows.
    ByteString body = random(2000);
    String other = "http://127.0.0.1:10";
    var from = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(CrossNodeReplies.encode(
        new Outcome.Stored(artifact(body)), Via.HIT, SELF, 1024, List.of(other, SELF))));
    assertEquals(List.of(SELF, other), from.holders(), "the entity's node first, each once");
    var stale = assertInstanceOf(CrossNodeReplies.FromPeer.class,
        roundTrip(CrossNodeReplies.stale(artifact(body), SELF, false, List.of(other))));
    assertEquals(List.of(SELF, other), stale.holders());
    var growing = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(CrossNodeReplies.encode(
        new Outcome.Streaming(HEADERS, 1L << 20, 3), Via.MISS, SELF, 1024, List.of(other))));
    assertEquals(List.of(SELF), growing.holders(), "only the downloading node has a running download");
    var fromAnEarlierBuild = new CrossNodeReplies.FromPeer(Via.HIT, HEADERS, 2000, SELF, artifact(body).sha256(),
        -1, 1234L, false, null);
    assertEquals(List.of(SELF), fromAnEarlierBuild.holders());
  }

  @Test
  void aPointerToAnotherSourceNamesItAndTheOthersEachWithItsOwnPath() {
    // Issue 17: the entity points at a node still receiving its copy; a copy that breaks resumes
    // from the other nodes named, each read at its own path (its download, or a committed blob).
    String b = "http://127.0.0.1:11";
    var growing = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(CrossNodeReplies.pointer(
        new Outcome.Streaming(HEADERS, 1L << 20, 3), Via.COALESCED, new dev.corral.core.fetch.Peers.Source(b, 77),
        List.of(new dev.corral.core.fetch.Peers.Source(SELF, 3)))));
    assertEquals(List.of(new PeerCopy.At(b, PeerEndpoint.downloadPath(77)), new PeerCopy.At(SELF, PeerEndpoint.downloadPath(3))),
        growing.sources());
    assertEquals(null, growing.sha256(), "the entity does not know the bytes' SHA-256 yet");
    ByteString body = random(2000);
    var committed = assertInstanceOf(CrossNodeReplies.FromPeer.class, roundTrip(CrossNodeReplies.pointer(
        new Outcome.Stored(artifact(body)), Via.HIT, new dev.corral.core.fetch.Peers.Source(b, 77),
        List.of(new dev.corral.core.fetch.Peers.Source(SELF, -1)))));
    assertEquals(Via.PEER, committed.via());
    assertEquals(artifact(body).sha256(), committed.sha256(), "a copy of committed bytes is verified against them");
    assertEquals(List.of(new PeerCopy.At(b, PeerEndpoint.downloadPath(77)),
        new PeerCopy.At(SELF, PeerEndpoint.blobPath(artifact(body).sha256()))), committed.sources());
    // A node of an earlier build sends no paths: its other nodes hold the committed blob.
    var old = new CrossNodeReplies.FromPeer(Via.HIT, HEADERS, 2000, SELF, artifact(body).sha256(), -1, 1L, false,
        List.of(b));
    assertEquals(List.of(new PeerCopy.At(SELF, PeerEndpoint.blobPath(artifact(body).sha256())),
        new PeerCopy.At(b, PeerEndpoint.blobPath(artifact(body).sha256()))), old.sources());
  }

  @Test
  void aStaleCopyCarriesWhetherItsLastRevalidationFailed() {
    // Issue 13 item 10: the waiter's node answers a relayed STALE with Warning: 111 as a local one.
    ByteString body = random(100);
    for (boolean failed : new boolean[] {true, false}) {
      CrossNodeReplies.FromPeer stale = assertInstanceOf(CrossNodeReplies.FromPeer.class,
          roundTrip(CrossNodeReplies.stale(artifact(body), SELF, failed, List.of())));
      assertEquals(Via.STALE, stale.via());
      Peers.Arrival.Copy copy = assertInstanceOf(Peers.Arrival.Copy.class, CrossNodeReplies.decode(stale, (u, p) -> null));
      assertEquals(failed, copy.revalidationFailed());
      assertEquals(1234L, copy.fetchedAtMillis());
    }
  }

  @Test
  void anInlineBodyThatDoesNotMatchItsSha256IsRefused() {
    ByteString body = random(100);
    var tampered = new CrossNodeReplies.Inline(Via.MISS, HEADERS, body, "0".repeat(64), -1);
    Peers.Arrival.Refused refused = assertInstanceOf(Peers.Arrival.Refused.class,
        CrossNodeReplies.decode(tampered, (u, p) -> null));
    assertEquals(Failure.BAD_BYTES, refused.reply().cause());
  }

  @Test
  void outcomesWithoutBytesAreSentAsTheyAre() {
    Reply nf = CrossNodeReplies.encode(new Outcome.NotFound(true, HEADERS), Via.MISS, SELF, 1024, List.of());
    assertEquals(new Reply.NotFound(Via.MISS, true, HEADERS), nf);
  }

  @Test
  void aBodyIsCarriedAsRawBytesNotBase64() {
    ByteString body = random(1 << 20);
    var message = new CrossNodeReplies.Inline(Via.MISS, HEADERS, body, Sha256.hex(body), -1);
    byte[] bytes = serialization.findSerializerFor(message).toBinary(message);
    assertTrue(bytes.length < body.size() + 1024, "serialized size " + bytes.length);
    // A ByteString made of several chunks is written as one byte string.
    ByteString chunked = random(10).concat(random(70_000)).concat(ByteString.emptyByteString()).concat(random(5));
    var in = (CrossNodeReplies.Inline) roundTrip(new CrossNodeReplies.Inline(Via.COALESCED, HEADERS, chunked, "c".repeat(64), 5));
    assertArrayEquals(chunked.toArray(), in.bytes().toArray());
  }
}
