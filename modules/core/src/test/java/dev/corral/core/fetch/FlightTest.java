package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.Outcome;
import dev.corral.core.key.ArtifactKey;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The flight alone, no actor: waiters are plain strings, those starting with "remote" being on
 * another node.
 */
class FlightTest {
  private static final ArtifactKey KEY = ArtifactKey.of("r", "http://127.0.0.1:1/a");

  private static Flight<String> flight(long leader, int maxWaiters) {
    return new Flight<>(1, KEY, leader, null, maxWaiters, w -> !w.startsWith("remote"));
  }

  @Test
  void theLeaderIsTheMissAndEveryOtherWaiterIsCoalesced() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    f.join(2, "b");
    f.join(3, "c");
    assertEquals(List.of(new Flight.Answer<>(1, "a", Via.MISS), new Flight.Answer<>(2, "b", Via.COALESCED),
        new Flight.Answer<>(3, "c", Via.COALESCED)), f.answers());
    assertTrue(f.unwatched(), "answered waiters are not kept (F4)");
    assertEquals(Set.of(1L, 2L, 3L), f.answered(), "only their tokens, for AskBegun (W3)");
  }

  @Test
  void waitersOnOtherNodesAreAnsweredFirst() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    f.join(2, "remote-b");
    f.join(3, "c");
    f.join(4, "remote-d");
    assertEquals(List.of("remote-b", "remote-d", "a", "c"),
        f.answers().stream().map(Flight.Answer::replyTo).toList());
  }

  @Test
  void aWaiterThatAsksAgainReplacesItsRegistration() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    f.join(2, "b");
    f.join(2, "b-again");
    assertEquals(List.of("a", "b-again"), f.answers().stream().map(Flight.Answer::replyTo).toList());
  }

  @Test
  void waitersPastTheMaximumAreRefused() {
    Flight<String> f = flight(1, 2);
    assertEquals(Flight.Joined.WAITING, f.join(1, "a"));
    assertEquals(Flight.Joined.WAITING, f.join(2, "b"));
    assertEquals(Flight.Joined.FULL, f.join(3, "c"));
    assertEquals(2, f.answers().size());
  }

  @Test
  void aLeavingWaiterNeverDisturbsTheOthersAndTheLastOneIsNoticed() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    f.join(2, "b");
    assertFalse(f.leave(1));
    assertFalse(f.leave(1), "leaving twice changes nothing");
    assertTrue(f.leave(2));
    assertTrue(f.unwatched());
  }

  @Test
  void onceTheBodyStreamsLaterWaitersJoinTheStream() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    Outcome.Streaming s = new Outcome.Streaming(List.of(), 10, 7);
    assertEquals(List.of(new Flight.Answer<>(1, "a", Via.MISS)), f.headersKnown(s));
    assertEquals(Flight.Joined.STREAMING, f.join(2, "b"));
    assertEquals(Set.of(1L, 2L), f.answered());
    assertEquals(Via.COALESCED, f.via(2));
    assertTrue(f.answers().isEmpty(), "a streaming joiner is answered at once, not registered");
  }

  @Test
  void aCopyFromAPeerIsPeerForEveryWaiter() {
    Flight<String> f = flight(1, 10);
    f.join(1, "a");
    f.join(2, "b");
    f.started(null, true);
    assertEquals(List.of(Via.PEER, Via.PEER), f.answers().stream().map(Flight.Answer::via).toList());
  }

  @Test
  void aRevalidationAnsweredStaleHasNoLeader() {
    Flight<String> f = flight(Flight.NO_LEADER, 10);
    f.join(5, "a");
    assertEquals(Via.COALESCED, f.answers().get(0).via());
  }
}
