package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.upstream.UpstreamException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.Test;

/** K2's per-upstream cap is a queue: requests past the capacity wait in turn; only past the limit are they refused. */
class PoolQueueTest {

  private static CompletableFuture<PoolQueue.Slot> enter(PoolQueue queue) {
    return queue.enter().toCompletableFuture();
  }

  @Test
  void requestsPastTheCapacityWaitAndGetSlotsInArrivalOrder() throws Exception {
    PoolQueue queue = new PoolQueue("r", 2, 10);
    PoolQueue.Slot a = enter(queue).getNow(null);
    PoolQueue.Slot b = enter(queue).getNow(null);
    assertTrue(a != null && b != null, "the first two get a slot at once");
    List<CompletableFuture<PoolQueue.Slot>> waiting = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      waiting.add(enter(queue));
    }
    assertEquals(2, queue.running());
    assertEquals(3, queue.waiting());
    assertTrue(waiting.stream().noneMatch(CompletableFuture::isDone), "none refused, none let through");

    a.release();
    assertTrue(waiting.get(0).isDone());
    assertFalse(waiting.get(1).isDone());
    a.release(); // a second release of one slot frees nothing more
    assertFalse(waiting.get(1).isDone());
    b.release();
    assertTrue(waiting.get(1).isDone());
    waiting.get(0).get().release();
    assertTrue(waiting.get(2).isDone());
    assertEquals(2, queue.running());
    assertEquals(0, queue.waiting());
    waiting.get(1).get().release();
    waiting.get(2).get().release();
    assertEquals(0, queue.running());
    assertTrue(enter(queue).isDone(), "free again");
  }

  @Test
  void pastItsLimitARequestIsRefusedAtOnceAsQueueFull() {
    PoolQueue queue = new PoolQueue("r", 1, 2);
    enter(queue);
    enter(queue);
    enter(queue);
    CompletableFuture<PoolQueue.Slot> refused = enter(queue);
    ExecutionException e = assertThrows(ExecutionException.class, refused::get);
    UpstreamException u = assertInstanceOf(UpstreamException.class, e.getCause());
    assertTrue(u.isQueueFull(), u.reason());
    assertEquals(2, queue.waiting());
  }

  @Test
  void theDefaultLimitIsLarge() {
    assertEquals(16384, PoolQueue.LIMIT);
  }
}
