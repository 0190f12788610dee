package dev.corral.core.fetch;

import dev.corral.core.download.Failure;
import dev.corral.core.record.Record;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Lifetime;
import java.util.List;
import java.util.Random;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorRef;
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
 * Every message that crosses nodes (the fetch entity's commands and replies; the cluster module's
 * own replies are its {@code CrossNodeRepliesTest}) and its persisted record survive a round trip through Pekko's serialization (jackson-cbor, with Corral's
 * ByteString module), bytes included.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SerializationTest {
  private ActorTestKit kit;
  private Serialization serialization;

  @BeforeAll
  void start() {
    kit = ActorTestKit.create("SerializationTest", ConfigFactory.parseString("""
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

  private Object roundTrip(Object message) {
    var serializer = serialization.findSerializerFor(message);
    assertTrue(serializer instanceof JacksonCborSerializer, message.getClass() + " uses " + serializer);
    // serialize() writes actor refs with the system's address, as Artery does.
    byte[] bytes = serialization.serialize(message).get();
    String manifest = Serializers.manifestFor(serializer, message);
    Object back = serialization.deserialize(bytes, serializer.identifier(), manifest).get();
    assertEquals(message, back);
    return back;
  }

  private static final List<Header> HEADERS = List.of(new Header("Content-Type", "application/x-test"),
      new Header("ETag", "\"v1\""));
  private static final StoredArtifact ARTIFACT =
      new StoredArtifact("k".repeat(64), "r|http://upstream.example/a", "a".repeat(64), 3, HEADERS, 1234L);

  private static ByteString random(int size) {
    byte[] b = new byte[size];
    new Random(size).nextBytes(b);
    return ByteString.fromArrayUnsafe(b);
  }

  @Test
  void commandsRoundTrip() {
    ActorRef<Reply> replyTo = kit.<Reply>createTestProbe().ref();
    ActorRef<Done> done = kit.<Done>createTestProbe().ref();
    ArtifactKey key = new ArtifactKey("r", "http://upstream.example/a.tgz", "abbreviated",
        new Digest("sha512", "ab".repeat(64)));
    FetchEntity.Join join = (FetchEntity.Join) roundTrip(new FetchEntity.Join(key, -42L, replyTo));
    assertEquals(replyTo, join.replyTo());
    roundTrip(new FetchEntity.Join(ArtifactKey.of("r", "http://upstream.example/b"), 7L, replyTo));
    roundTrip(new FetchEntity.Leave(Long.MIN_VALUE));
    roundTrip(new FetchEntity.Purge(done));
    ActorRef<FetchEntity.Purged> purged = kit.<FetchEntity.Purged>createTestProbe().ref();
    roundTrip(new FetchEntity.PurgeAll("http://127.0.0.1:8080", purged));
    roundTrip(new FetchEntity.PurgeAll(null, purged));
    roundTrip(new FetchEntity.Purged(2, 1, true, true));
    roundTrip(new FetchEntity.Holding("http://127.0.0.1:8080", "b".repeat(64)));
    roundTrip(new FetchEntity.Dropped("http://127.0.0.1:8080"));
    roundTrip(new FetchEntity.Copying("http://127.0.0.1:8080", 123_456_789_012L));
    roundTrip(new FetchEntity.CopyEnded("http://127.0.0.1:8080", "PEER_ERROR"));
    FetchEntity.Join from = (FetchEntity.Join) roundTrip(new FetchEntity.Join(key, 9L, replyTo, Lifetime.IMMUTABLE,
        "http://127.0.0.1:8081"));
    assertEquals("http://127.0.0.1:8081", from.from());
    roundTrip(FetchEntity.Stop.INSTANCE);
    ActorRef<FetchEntity.Begun> begunTo = kit.<FetchEntity.Begun>createTestProbe().ref();
    FetchEntity.AskBegun asked = (FetchEntity.AskBegun) roundTrip(new FetchEntity.AskBegun(7, begunTo));
    assertEquals(begunTo, asked.replyTo());
    assertEquals(7, asked.token());
    roundTrip(new FetchEntity.Begun(true));
    roundTrip(new FetchEntity.Begun(false));
  }

  @Test
  void aJoinCarriesItsLifetimeAndAnOlderNodesJoinTakesItFromItsMutableFlag() throws Exception {
    ActorRef<Reply> replyTo = kit.<Reply>createTestProbe().ref();
    ArtifactKey key = ArtifactKey.of("g", "http://upstream.example/dists/Release");
    for (Lifetime lifetime : List.of(Lifetime.IMMUTABLE, Lifetime.METADATA, Lifetime.UPSTREAM,
        Lifetime.fixed(java.time.Duration.ofMinutes(5)))) {
      FetchEntity.Join back = (FetchEntity.Join) roundTrip(new FetchEntity.Join(key, 7L, replyTo, lifetime));
      assertEquals(lifetime, back.lifetime());
    }
    // What an older node sends: no lifetime, only the flag.
    FetchEntity.Join sample = new FetchEntity.Join(key, 7L, null, true);
    var serializer = serialization.findSerializerFor(sample);
    var mapper = org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider.get(Adapter.toClassic(kit.system()))
        .getOrCreate("jackson-cbor", java.util.Optional.empty());
    java.util.Map<String, Object> older = new java.util.LinkedHashMap<>();
    older.put("key", key);
    older.put("token", 7L);
    older.put("mutable", true);
    byte[] bytes = mapper.writeValueAsBytes(older);
    FetchEntity.Join fromOlder = (FetchEntity.Join) serialization.deserialize(bytes, serializer.identifier(),
        Serializers.manifestFor(serializer, sample)).get();
    assertEquals(Lifetime.METADATA, fromOlder.lifetime());
    older.put("mutable", false);
    fromOlder = (FetchEntity.Join) serialization.deserialize(mapper.writeValueAsBytes(older), serializer.identifier(),
        Serializers.manifestFor(serializer, sample)).get();
    assertEquals(Lifetime.IMMUTABLE, fromOlder.lifetime());
    assertEquals(null, fromOlder.from(), "an older node's Join names no asking node: it is answered from the entity's node");
  }

  @Test
  void aNodeWithoutFanOutReadsANewJoinAndANewNodeAnOldHolding() throws Exception {
    // Rolling restarts (issue 17): a Join with the new field read as a node that does not know it
    // would (unknown properties are ignored), and a Holding without any field a new node added.
    var mapper = org.apache.pekko.serialization.jackson.JacksonObjectMapperProvider.get(Adapter.toClassic(kit.system()))
        .getOrCreate("jackson-cbor", java.util.Optional.empty());
    java.util.Map<String, Object> withUnknown = new java.util.LinkedHashMap<>();
    withUnknown.put("peerUrl", "http://127.0.0.1:8080");
    withUnknown.put("sha256", "b".repeat(64));
    withUnknown.put("aFieldOfALaterBuild", 42);
    FetchEntity.Holding sample = new FetchEntity.Holding("x", "y");
    var serializer = serialization.findSerializerFor(sample);
    FetchEntity.Holding back = (FetchEntity.Holding) serialization.deserialize(mapper.writeValueAsBytes(withUnknown),
        serializer.identifier(), Serializers.manifestFor(serializer, sample)).get();
    assertEquals(new FetchEntity.Holding("http://127.0.0.1:8080", "b".repeat(64)), back);
  }

  @Test
  void repliesRoundTripWithTheirBytes() {
    ByteString body = random(100_000);
    Reply.Body b = (Reply.Body) roundTrip(new Reply.Body(Via.MISS, HEADERS, body));
    assertArrayEquals(body.toArray(), b.bytes().toArray());
    // A ByteString made of several chunks is written as one byte string.
    ByteString chunked = random(10).concat(random(70_000)).concat(ByteString.emptyByteString()).concat(random(5));
    Reply.Body in = (Reply.Body) roundTrip(new Reply.Body(Via.COALESCED, HEADERS, chunked));
    assertArrayEquals(chunked.toArray(), in.bytes().toArray());
    roundTrip(new Reply.Body(Via.PEER, List.of(), ByteString.emptyByteString()));
    roundTrip(new Reply.Stored(Via.HIT, ARTIFACT));
    roundTrip(new Reply.Streaming(Via.COALESCED, HEADERS, 1L << 33, 17));
    roundTrip(new Reply.NotFound(Via.NEGATIVE, true, HEADERS));
    roundTrip(new Reply.Failed(Failure.UPSTREAM_TIMEOUT, "upstream timed out"));
    roundTrip(new Reply.Retry("the fetch entity stopped"));
  }

  /**
   * The shaded server jar's merged reference.conf lists Corral's ByteString module before
   * jackson-module-scala, which then claims ByteString as a Scala sequence (an array of numbers,
   * read back as a Vector: "argument type mismatch" on the receiving node, the reply dropped).
   * The bytes fields name their (de)serializers, so module order does not matter.
   */
  @Test
  void bytesSurviveWhenTheByteStringModuleIsRegisteredBeforeTheScalaModule() {
    String path = "pekko.serialization.jackson.jackson-modules";
    List<String> modules = new java.util.ArrayList<>(ConfigFactory.load().getStringList(path));
    modules.remove("dev.corral.core.ByteStringModule");
    modules.add(0, "dev.corral.core.ByteStringModule");
    assertTrue(modules.indexOf("com.fasterxml.jackson.module.scala.DefaultScalaModule") > 0, modules.toString());
    ActorTestKit shadedOrder = ActorTestKit.create("SerializationTestShadedOrder", ConfigFactory.parseString("""
        pekko.actor.provider = cluster
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.actor.serialization-bindings { "dev.corral.core.CborSerializable" = jackson-cbor }
        """).withValue(path, com.typesafe.config.ConfigValueFactory.fromIterable(modules))
        .withFallback(ConfigFactory.load()));
    try {
      Serialization s = SerializationExtension.get(Adapter.toClassic(shadedOrder.system()));
      ByteString body = random(50_000);
      for (Object message : List.of(new Reply.Body(Via.COALESCED, HEADERS, body),
          new Reply.Body(Via.MISS, HEADERS, body))) {
        var serializer = s.findSerializerFor(message);
        byte[] bytes = s.serialize(message).get();
        assertTrue(bytes.length < body.size() + 1_000, "one byte string, not a list of numbers: " + bytes.length);
        Object back = s.deserialize(bytes, serializer.identifier(), Serializers.manifestFor(serializer, message)).get();
        assertEquals(message, back);
      }
    } finally {
      shadedOrder.shutdownTestKit();
    }
  }

  @Test
  void recordsRoundTripWithTheirHolders() {
    roundTrip(Record.EMPTY);
    roundTrip(new Record(ARTIFACT));
    Record r = (Record) roundTrip(
        new Record(ARTIFACT, List.of("http://127.0.0.1:1", "http://127.0.0.1:2")));
    assertEquals(List.of("http://127.0.0.1:1", "http://127.0.0.1:2"), r.holders());
    Record tombstone = (Record) roundTrip(r.purged(1234L));
    assertEquals(1234L, tombstone.purgedAtMillis());
    assertEquals(1234L, ((Record) roundTrip(tombstone.committed(ARTIFACT, "http://127.0.0.1:1"))).purgedAtMillis());
  }

  @Test
  void aRecordWrittenBeforeHoldersExistedReadsWithNone() throws Exception {
    // What an older node wrote: the record without a holders field.
    var serializer = serialization.findSerializerFor(Record.EMPTY);
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper(new com.fasterxml.jackson.dataformat.cbor.CBORFactory());
    byte[] old = mapper.writeValueAsBytes(java.util.Map.of("cached", java.util.Map.of(
        "keyId", ARTIFACT.keyId(), "key", ARTIFACT.key(), "sha256", ARTIFACT.sha256(), "size", 3,
        "headers", List.of(), "fetchedAtMillis", 1L)));
    Record r = (Record) serialization.deserialize(old, serializer.identifier(),
        Serializers.manifestFor(serializer, Record.EMPTY)).get();
    assertEquals(ARTIFACT.sha256(), r.cached().sha256());
    assertEquals(List.of(), r.holders());
    assertEquals(0L, r.purgedAtMillis(), "never purged");
  }

  @Test
  void aRecordPersistedUnderItsEarlierClassNameIsReadAsARecord() {
    // Before the record package, records were written with the manifest of FetchEntity's nested
    // class; a cluster's database still holds them.
    Record written = new Record(ARTIFACT, List.of("http://127.0.0.1:1"));
    var serializer = serialization.findSerializerFor(written);
    byte[] bytes = serialization.serialize(written).get();
    Object back = serialization.deserialize(bytes, serializer.identifier(),
        "dev.corral.core.fetch.FetchEntity$Record").get();
    assertEquals(written, back);
  }

  @Test
  void aBodyIsCarriedAsRawBytesNotBase64() {
    ByteString body = random(1 << 20);
    var message = new Reply.Body(Via.MISS, HEADERS, body);
    byte[] bytes = serialization.findSerializerFor(message).toBinary(message);
    // CBOR byte string: the payload plus a few hundred bytes of fields, not 4/3 of it.
    assertTrue(bytes.length < body.size() + 1024, "serialized size " + bytes.length);
    assertNotEquals(0, bytes.length);
  }
}
