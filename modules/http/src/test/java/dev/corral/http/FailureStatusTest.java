package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.core.download.Failure;
import org.junit.jupiter.api.Test;

/** The status a client gets for each way a fetch fails. */
class FailureStatusTest {

  @Test
  void aFullUpstreamQueueIsA503LikeTooManyWaitersNotA502() {
    assertEquals(503, KeyServe.status(Failure.UPSTREAM_BUSY));
    assertEquals(503, KeyServe.status(Failure.TOO_MANY_WAITERS));
    assertEquals(504, KeyServe.status(Failure.UPSTREAM_TIMEOUT));
    assertEquals(502, KeyServe.status(Failure.UPSTREAM_ERROR));
  }
}
