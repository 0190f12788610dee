package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.download.Failure;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.UpstreamResponse;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/** SEMANTICS K1 (what a key is) and K2 (distinct keys never wait on each other). */
class KeyIdentityTest extends EntityTestBase {

  // Each test holds the upstream open: keys that shared a fetch would then show fewer requests.

  @Test
  void k1_differentUpstreamUrlsNeverShareAFetch() {
    // K1: Different upstream URLs never share a fetch.
    String a = url("a");
    String b = url("b");
    CompletableFuture<UpstreamResponse> gateA = upstream.hold(a);
    CompletableFuture<UpstreamResponse> gateB = upstream.hold(b);
    ArtifactKey keyA = ArtifactKey.of("r", a);
    ArtifactKey keyB = ArtifactKey.of("r", b);
    assertNotEquals(keyA.id(), keyB.id());

    var answerA = ask(keyA);
    var answerB = ask(keyB);
    awaitRequests(a, 1);
    awaitRequests(b, 1);
    gateA.complete(ScriptedUpstream.ok(ByteString.fromString("bytes of a")));
    gateB.complete(ScriptedUpstream.ok(ByteString.fromString("bytes of b")));

    assertEquals("bytes of a", reply(answerA, Reply.Body.class).bytes().utf8String());
    assertEquals("bytes of b", reply(answerB, Reply.Body.class).bytes().utf8String());
  }

  @Test
  void k1_differentRepositoriesNeverShareAFetch() {
    // K1: A key is: repository name + ...
    String u = url("same-url-two-repos");
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    var one = ask(ArtifactKey.of(repo(), u));
    var two = ask(ArtifactKey.of(repo(), u));
    awaitRequests(u, 2);
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("x")));
    assertEquals(Via.MISS, reply(one, Reply.Body.class).via());
    assertEquals(Via.MISS, reply(two, Reply.Body.class).via());
  }

  @Test
  void k1_differentVariantsNeverShareAFetch() {
    // K1: Different variants never share a fetch.
    String u = url("packument");
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    ArtifactKey abbreviated = new ArtifactKey("r", u, "abbreviated", null);
    ArtifactKey full = new ArtifactKey("r", u, "full", null);
    assertNotEquals(abbreviated.id(), full.id());

    var one = ask(abbreviated);
    var two = ask(full);
    awaitRequests(u, 2);
    gate.complete(ScriptedUpstream.ok(ByteString.fromString("{}")));
    assertEquals(Via.MISS, reply(one, Reply.Body.class).via());
    assertEquals(Via.MISS, reply(two, Reply.Body.class).via());
  }

  @Test
  void k1_differentExpectedDigestsNeverShareAFetch() {
    // K1: Different expected digests never share a fetch.
    String u = url("republished");
    ByteString served = ByteString.fromString("the bytes upstream serves now");
    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    ArtifactKey expectsServed = new ArtifactKey("r", u, "", sha256(served));
    ArtifactKey expectsOther = new ArtifactKey("r", u, "", sha256(ByteString.fromString("older bytes")));
    assertNotEquals(expectsServed.id(), expectsOther.id());

    var one = ask(expectsServed);
    var two = ask(expectsOther);
    awaitRequests(u, 2);
    gate.complete(ScriptedUpstream.ok(served));
    // Each got the verdict of its own fetch: sharing would have given both the same one.
    assertEquals(served, reply(one, Reply.Body.class).bytes());
    assertEquals(Failure.BAD_BYTES, reply(two, Reply.Failed.class).cause());
  }

  @Test
  void k1_oneDigestInTwoCasingsIsOneKey() {
    // K1: One digest written in two casings is one key.
    String u = url("casing");
    ByteString body = ByteString.fromString("artifact bytes");
    String hex = sha256(body).hex();
    ArtifactKey lower = new ArtifactKey("r", u, "", new Digest("sha256", hex));
    ArtifactKey upper = new ArtifactKey("r", u, "", new Digest("SHA-256", hex.toUpperCase(Locale.ROOT)));
    assertEquals(lower, upper);
    assertEquals(lower.id(), upper.id());

    CompletableFuture<UpstreamResponse> gate = upstream.hold(u);
    var one = ask(lower);
    var two = ask(upper);
    barrier(lower);
    gate.complete(ScriptedUpstream.ok(body));
    List<Via> vias = List.of(reply(one, Reply.Body.class).via(), reply(two, Reply.Body.class).via());
    assertEquals(List.of(Via.MISS, Via.COALESCED), vias);
    assertEquals(1, upstream.count(u));
  }

  @Test
  void k2_distinctKeysAskedAtOnceFetchInParallel() {
    // K2: Distinct keys never wait on each other: K keys asked at once run K fetches in parallel.
    int k = 8;
    List<String> urls = new ArrayList<>();
    List<CompletableFuture<UpstreamResponse>> gates = new ArrayList<>();
    List<CompletableFuture<Waiters.Answer>> answers = new ArrayList<>();
    for (int i = 0; i < k; i++) {
      String u = url("parallel-" + i);
      urls.add(u);
      gates.add(upstream.hold(u));
      answers.add(ask(ArtifactKey.of("r", u)));
    }
    // Every fetch has started while none has finished: nothing waits on another key.
    awaitAssert(() -> urls.forEach(u -> assertEquals(1, upstream.count(u), u)));
    assertFalse(gates.stream().anyMatch(CompletableFuture::isDone));
    for (int i = 0; i < k; i++) {
      gates.get(i).complete(ScriptedUpstream.ok(ByteString.fromString("body " + i)));
    }
    for (int i = 0; i < k; i++) {
      assertEquals("body " + i, reply(answers.get(i), Reply.Body.class).bytes().utf8String());
    }
  }

  static Digest sha256(ByteString bytes) {
    try {
      return new Digest("sha256",
          HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.toArray())));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
