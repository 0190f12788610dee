package dev.corral.core.fetch;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What keeps an idle entity from passivating (L1, {@code FetchEntity.passivateIfDone}): the
 * memories that would die with it ({@link Freshness}) and the uploads it pointed nodes at
 * ({@link Sources}), each until it ends. The entity side is {@code LifecycleTest}.
 */
class EntityMemoryTest {
  private final EntityTestBase.MovableTicker ticker = new EntityTestBase.MovableTicker();

  @Test
  void aNotFoundIsRememberedUntilItsTtlEnds() {
    Freshness f = new Freshness(ticker);
    assertFalse(f.remembers(), "nothing yet");
    f.ended(new Outcome.NotFound(false, List.of()), false, FetchPolicy.defaults(), -1);
    assertTrue(f.remembers());
    ticker.advance(FetchPolicy.defaults().negativeTtl().minusNanos(1));
    assertTrue(f.remembers(), "forgotten before its TTL");
    ticker.advance(Duration.ofNanos(1));
    assertFalse(f.remembers(), "remembered past its TTL");
  }

  @Test
  void aFailedRevalidationIsRememberedForItsPause() {
    Freshness f = new Freshness(ticker);
    f.ended(new Outcome.Failed(Failure.UPSTREAM_ERROR, "502"), true, FetchPolicy.defaults(), -1);
    assertTrue(f.remembers());
    assertFalse(f.mayRevalidate());
    ticker.advance(Freshness.REVALIDATION_RETRY);
    assertTrue(f.mayRevalidate());
    assertFalse(f.remembers(), "remembered past the pause");
  }

  @Test
  void aFailedFetchThatWasNoRevalidationIsNotRemembered() {
    Freshness f = new Freshness(ticker);
    f.ended(new Outcome.Failed(Failure.UPSTREAM_ERROR, "502"), false, FetchPolicy.defaults(), -1);
    assertFalse(f.remembers(), "W2: a failure is not cached");
  }

  @Test
  void aPurgeForgetsEverything() {
    Freshness f = new Freshness(ticker);
    f.ended(new Outcome.NotFound(true, List.of()), false, FetchPolicy.defaults(), -1);
    f.purged();
    assertFalse(f.remembers());
  }

  @Test
  void anUploadCountsUntilItEndsOrItsLeaseRunsOut() {
    Sources s = new Sources();
    assertFalse(s.uploading());
    s.point("http://127.0.0.1:1", "http://127.0.0.1:2", 0);
    assertTrue(s.uploading(), "a pointed upload");
    s.copying("http://127.0.0.1:1", 7);
    s.ended("http://127.0.0.1:1");
    assertFalse(s.uploading(), "its copy ended");

    long lease = s.point("http://127.0.0.1:3", "http://127.0.0.1:2", 0);
    s.copying("http://127.0.0.1:3", 8);
    assertTrue(s.uploading());
    s.expired("http://127.0.0.1:3", lease);
    assertFalse(s.uploading(), "its lease ran out");
  }

  @Test
  void aNodeStillReceivingWithNoOpenUploadDoesNotCount() {
    // A node that crashed mid-copy never ends its receiving row: it must not keep the entity.
    Sources s = new Sources();
    s.copying("http://127.0.0.1:4", 9);
    assertFalse(s.uploading());
  }
}
