package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.record.Record;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.NotUsed;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Issue 13 item 4: a copy from holders that fails by their fault (bytes that are not the recorded
 * ones, a body cut short, no bytes at all) is the holders' failure, not the key's. The entity drops
 * them from the key's record and goes on, in the same flight, to the holders not asked yet, then
 * to the upstream once; the waiter gets the right bytes, never a 502, and a later miss does not
 * ask the failed holders again.
 */
class PeerFallThroughTest extends EntityTestBase {
  private static final String SELF = "http://127.0.0.1:1";
  private static final String H1 = "http://127.0.0.1:2";
  private static final String H2 = "http://127.0.0.1:3";
  private static final ByteString BODY = bytes(300_000, 13);

  /** What each stand-in holder gives: the bytes it answers 200 with (cut short when marked). */
  private final Map<String, Holder> holders = new ConcurrentHashMap<>();
  /** Every holder asked by every copy, in order. */
  private final List<String> asked = new java.util.concurrent.CopyOnWriteArrayList<>();

  private record Holder(ByteString bytes, boolean breaks) {}

  @Override
  Peers peers() {
    return new Peers() {
      @Override
      public Optional<String> self() {
        return Optional.of(SELF);
      }

      @Override
      public boolean othersMayHold() {
        return true;
      }

      @Override
      public Reply forAnotherNode(Outcome outcome, Via via, List<String> alsoHeldBy) {
        return new Reply.Retry("no other node in this test");
      }

      @Override
      public Arrival arrived(Reply.ForAnotherNode reply) {
        throw new AssertionError("no reply from another node in this test");
      }

      @Override
      public HolderCopy copy(List<String> from, String sha256) {
        return new StandInCopy(from);
      }
    };
  }

  /** The holders asked in order; the first that has the bytes gives them (no resuming here). */
  private final class StandInCopy implements Peers.HolderCopy {
    private final List<String> from;
    private final List<String> mine = new ArrayList<>();

    StandInCopy(List<String> from) {
      this.from = from;
    }

    @Override
    public synchronized List<String> asked() {
      return List.copyOf(mine);
    }

    @Override
    public CompletionStage<UpstreamResponse> get(UpstreamRequest request) {
      for (String h : from) {
        synchronized (this) {
          mine.add(h);
        }
        asked.add(h);
        Holder holder = holders.get(h);
        if (holder != null) {
          Source<ByteString, NotUsed> body = Source.single(holder.breaks() ? holder.bytes().take(1000) : holder.bytes());
          if (holder.breaks()) {
            body = body.concat(Source.lazySource(() -> Source.<ByteString>failed(new IOException("connection reset")))
                .mapMaterializedValue(m -> NotUsed.getInstance()));
          }
          return CompletableFuture.completedFuture(
              new UpstreamResponse(200, List.of(), OptionalLong.of(holder.bytes().size()), body));
        }
      }
      return CompletableFuture.failedFuture(new IOException("no holder gave it"));
    }
  }

  private static ByteString corrupt(ByteString good) {
    byte[] b = good.toArray();
    b[b.length / 3] ^= 1;
    return ByteString.fromArray(b);
  }

  private Record record(ArtifactKey key) {
    try {
      return node.records().read(PersistenceId.of(FetchEntity.TYPE_KEY.name(), key.id()).id())
          .toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS).value().orElse(Record.EMPTY);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /**
   * The key fetched once from the upstream (this node recorded as its holder), then {@code others}
   * recorded as holders too, then this node's copy lost: the next request is a miss that copies.
   */
  private ArtifactKey heldElsewhere(String name, String... others) throws IOException {
    ArtifactKey key = ArtifactKey.of(repo(), url(name));
    upstream.serve(key.url(), BODY);
    assertEquals(BODY, reply(ask(key), Reply.Body.class).bytes());
    awaitAssert(() -> assertEquals(List.of(SELF), record(key).holders()));
    String sha = node.store().lookup(key).orElseThrow().sha256();
    for (String h : others) {
      entity(key).tell(new FetchEntity.Holding(h, sha));
    }
    List<String> all = new ArrayList<>(List.of(SELF));
    all.addAll(List.of(others));
    awaitAssert(() -> assertEquals(all, record(key).holders()));
    assertTrue(node.store().remove(key));
    return key;
  }

  @Test
  void aHolderWhoseBytesAreNotTheRecordedOnesIsDroppedAndTheNextHolderGivesThem() throws Exception {
    ArtifactKey key = heldElsewhere("corrupt-then-good", H1, H2);
    holders.put(H1, new Holder(corrupt(BODY), false));
    holders.put(H2, new Holder(BODY, false));
    asked.clear();

    Reply.Body body = reply(ask(key), Reply.Body.class);
    assertEquals(BODY, body.bytes());
    assertEquals(Via.PEER, body.via());
    assertEquals(List.of(H1, H2), asked, "the bad holder, then the next one; each once");
    assertEquals(1, upstream.count(key.url()), "copied from a holder, not fetched again");
    awaitAssert(() -> assertEquals(List.of(SELF, H2), record(key).holders()));

    // A later miss on this node asks the good holder only.
    assertTrue(node.store().remove(key));
    asked.clear();
    assertEquals(BODY, reply(ask(key), Reply.Body.class).bytes());
    assertEquals(List.of(H2), asked);
  }

  @Test
  void whenEveryHolderFailsTheSameFlightAsksTheUpstreamOnce() throws Exception {
    ArtifactKey key = heldElsewhere("all-bad", H1, H2);
    holders.put(H1, new Holder(corrupt(BODY), false));
    holders.put(H2, new Holder(BODY, true)); // cut short
    asked.clear();

    List<java.util.concurrent.CompletableFuture<dev.corral.core.wait.Waiters.Answer>> answers = ask(key, 3);
    for (var a : answers) {
      assertEquals(BODY, reply(a, Reply.Body.class).bytes(), "every waiter of the flight gets the right bytes");
    }
    assertEquals(List.of(H1, H2), asked);
    assertEquals(2, upstream.count(key.url()), "the upstream once more, after the holders");
    awaitAssert(() -> assertEquals(List.of(SELF), record(key).holders()));

    // The failure was not the key's: a later miss neither fails nor asks the dropped holders.
    assertTrue(node.store().remove(key));
    asked.clear();
    assertEquals(BODY, reply(ask(key), Reply.Body.class).bytes());
    assertEquals(List.of(), asked);
    assertEquals(3, upstream.count(key.url()));
  }

  @Test
  void holdersThatNoLongerHoldTheBytesAreDroppedAndTheUpstreamGivesThem() throws Exception {
    ArtifactKey key = heldElsewhere("gone", H1);
    holders.remove(H1);
    asked.clear();

    Reply.Body body = reply(ask(key), Reply.Body.class);
    assertEquals(BODY, body.bytes());
    assertEquals(Via.MISS, body.via());
    assertEquals(List.of(H1), asked);
    assertEquals(2, upstream.count(key.url()));
    awaitAssert(() -> assertEquals(List.of(SELF), record(key).holders()));
  }
}
