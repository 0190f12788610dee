package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamResponse;
import dev.corral.core.wait.CancelRegistry;
import dev.corral.core.wait.Waiters;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.Entity;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * K2 on the waiter's side of a reply made on another node: the reply is decoded, answered and
 * stored off the thread that delivered it (in a cluster, Artery's inbound thread, shared by every
 * message from that node), and a copy from another node is started outside the node's shared-ask
 * monitor, so other keys' waiters attach meanwhile. The key's entity is a stand-in that answers
 * every Join as an entity on another node would ({@link Reply.ForAnotherNode}); the node's
 * {@link Peers} is a stand-in that notes where it is called.
 */
class PeerRepliesTest extends EntityTestBase {
  private static final byte[] BODY = new byte[300_000];
  private static final String SHA;

  static {
    new Random(11).nextBytes(BODY);
    SHA = HexFormat.of().formatHex(Sha256.digest().digest(BODY));
  }

  /** What an entity on another node answers, as the waiter's node receives it. */
  record FromElsewhere(String url) implements Reply.ForAnotherNode {}

  /** The thread each reply from elsewhere was decoded on, by URL. */
  private final Map<String, String> decodedOn = new ConcurrentHashMap<>();
  /** Per copied URL: whether another key's waiter could attach while the copy was being started. */
  private final Map<String, CompletableFuture<Boolean>> otherKeyAttached = new ConcurrentHashMap<>();

  @Override
  void initEntities() {
    ClusterSharding.get(kit.system()).init(Entity.of(FetchEntity.TYPE_KEY, ctx -> Behaviors.receive(FetchEntity.Command.class)
        .onMessage(FetchEntity.Join.class, join -> {
          String url = join.key().url();
          join.replyTo().tell(url.contains("/elsewhere/") ? new FromElsewhere(url)
              : new Reply.NotFound(Via.MISS, false, List.of()));
          return Behaviors.same();
        })
        .onMessage(FetchEntity.Stop.class, stop -> Behaviors.stopped())
        .onAnyMessage(other -> Behaviors.same())
        .build()));
  }

  @Override
  Peers peers() {
    return new Peers() {
      @Override
      public Optional<String> self() {
        return Optional.empty();
      }

      @Override
      public boolean othersMayHold() {
        return false;
      }

      @Override
      public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
        throw new UnsupportedOperationException("this node's entities are stand-ins");
      }

      @Override
      public Arrival arrived(Reply.ForAnotherNode reply) {
        String url = ((FromElsewhere) reply).url();
        decodedOn.put(url, Thread.currentThread().getName());
        List<Header> headers = List.of(new Header("Content-Type", "x/y"));
        if (url.contains("/inline/")) {
          return new Arrival.Body(new Reply.Body(Via.PEER, headers, ByteString.fromArray(BODY)), SHA, -1);
        }
        return new Arrival.Copy(Via.PEER, source(url), SHA, headers, -1, false);
      }

      @Override
      public HolderCopy copy(List<String> holders, String sha256) {
        throw new UnsupportedOperationException();
      }
    };
  }

  /**
   * Another node's copy of the bytes. Asked for them (the copy starting), it first has a waiter
   * for another key attach on another thread, and notes whether that attach returned.
   */
  private Upstream source(String url) {
    return request -> {
      CompletableFuture<Void> attach = CompletableFuture.runAsync(() -> ask(ArtifactKey.of(repo(), url("other"))));
      boolean attached;
      try {
        attach.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        attached = true;
      } catch (Exception e) {
        attached = false; // blocked: the copy is being started under the monitor other keys need
      }
      attachedWhileStarting(url).complete(attached);
      return CompletableFuture.completedFuture(new UpstreamResponse(200, List.of(), OptionalLong.of(BODY.length),
          Source.single(ByteString.fromArray(BODY))));
    };
  }

  private CompletableFuture<Boolean> attachedWhileStarting(String url) {
    return otherKeyAttached.computeIfAbsent(url, u -> new CompletableFuture<>());
  }

  @BeforeAll
  void waitersThatMayCopy() {
    // Copies from other nodes need the actor system (the base class's waiters have none).
    waiters = new Waiters(sharding, new CancelRegistry(ticker, Duration.ofSeconds(120), 1000), node, kit.system());
  }

  @Test
  void aReplyFromAnotherNodeIsDecodedOnTheIoDispatcherNotOnTheThreadThatDeliveredIt() {
    ArtifactKey key = ArtifactKey.of(repo(), url("elsewhere/inline"));
    Reply.Body body = reply(ask(key), Reply.Body.class);
    assertEquals(ByteString.fromArray(BODY), body.bytes());
    String thread = decodedOn.get(key.url());
    assertTrue(thread.contains("blocking-io-dispatcher"), "decoded on " + thread);
  }

  @Test
  void aCopyFromAnotherNodeIsStartedOutsideTheMonitorSoOtherKeysAttachMeanwhile() throws Exception {
    ArtifactKey key = ArtifactKey.of(repo(), url("elsewhere/copy"));
    CompletableFuture<Waiters.Answer> asked = ask(key);
    assertTrue(attachedWhileStarting(key.url()).get(2 * WAIT.toMillis(), TimeUnit.MILLISECONDS),
        "another key's waiter attached while the copy was being started");
    Waiters.Answered answered = assertInstanceOf(Waiters.Answered.class, answer(asked));
    assertTrue(answered.reply() instanceof Reply.Streaming || answered.reply() instanceof Reply.Body
        || answered.reply() instanceof Reply.Stored, "answered " + answered.reply());
    String thread = decodedOn.get(key.url());
    assertTrue(thread.contains("blocking-io-dispatcher"), "decoded on " + thread);
  }
}
