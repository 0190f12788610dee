package dev.corral.core.wait;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The node's byte budget for bodies held whole: admission, waiting in order, the wait's end. */
class ByteBudgetTest {
  private static final Duration WAIT = Duration.ofSeconds(5);

  /** Holds scheduled timeouts until the test fires them (the budget's only notion of time). */
  private static final class HeldTimers implements Scheduler {
    final List<Runnable> due = new ArrayList<>();
    final List<Long> delays = new ArrayList<>();

    @Override
    public Future<?> schedule(Executor executor, Runnable command, long delay, TimeUnit unit) {
      CompletableFuture<Void> f = new CompletableFuture<>();
      due.add(() -> {
        if (!f.isCancelled()) {
          executor.execute(command);
        }
      });
      delays.add(unit.toNanos(delay));
      return f;
    }

    void fireAll() {
      List<Runnable> now = new ArrayList<>(due);
      due.clear();
      now.forEach(Runnable::run);
    }
  }

  private final HeldTimers timers = new HeldTimers();
  private final ByteBudget budget = new ByteBudget(100, WAIT, timers, Runnable::run);

  @Test
  void requestsThatFitAreGrantedAtOnceAndHeldUntilClosed() throws Exception {
    ByteBudget.Permit a = budget.acquire(60).toCompletableFuture().getNow(null);
    ByteBudget.Permit b = budget.acquire(40).toCompletableFuture().getNow(null);
    assertEquals(100, budget.held());
    a.close();
    a.close(); // a second close gives nothing back twice
    assertEquals(40, budget.held());
    b.close();
    assertEquals(0, budget.held());
  }

  @Test
  void aRequestThatDoesNotFitWaitsForRoomInArrivalOrder() throws Exception {
    ByteBudget.Permit first = budget.acquire(90).toCompletableFuture().getNow(null);
    CompletableFuture<ByteBudget.Permit> big = budget.acquire(50).toCompletableFuture();
    CompletableFuture<ByteBudget.Permit> small = budget.acquire(5).toCompletableFuture();
    assertFalse(big.isDone());
    assertFalse(small.isDone(), "a later small request does not overtake the one waiting before it");
    assertEquals(2, budget.waiting());
    assertEquals(List.of(WAIT.toNanos(), WAIT.toNanos()), timers.delays, "each waits at most the budget's wait");

    first.close();
    assertEquals(50, big.get().bytes());
    assertEquals(5, small.get().bytes());
    assertEquals(55, budget.held());
    timers.fireAll(); // the granted requests' timeouts find nothing to do
    assertEquals(55, budget.held());
  }

  @Test
  void aRequestStillWaitingWhenItsWaitEndsFailsAndHoldsNothing() {
    ByteBudget.Permit first = budget.acquire(100).toCompletableFuture().getNow(null);
    CompletableFuture<ByteBudget.Permit> late = budget.acquire(10).toCompletableFuture();
    timers.fireAll();
    ExecutionException e = assertThrows(ExecutionException.class, late::get);
    assertInstanceOf(ByteBudget.Exhausted.class, e.getCause());
    assertEquals(0, budget.waiting());
    first.close();
    assertEquals(0, budget.held(), "the timed-out request is not granted later");
  }

  @Test
  void aDocumentLargerThanTheWholeBudgetIsServedAlone() throws Exception {
    ByteBudget.Permit huge = budget.acquire(250).toCompletableFuture().getNow(null);
    assertEquals(250, huge.bytes(), "alone, an oversized request is granted");
    CompletableFuture<ByteBudget.Permit> next = budget.acquire(1).toCompletableFuture();
    assertFalse(next.isDone(), "nothing else while it is held");
    huge.close();
    assertTrue(next.isDone());

    ByteBudget.Permit small = next.get();
    CompletableFuture<ByteBudget.Permit> hugeAgain = budget.acquire(250).toCompletableFuture();
    assertFalse(hugeAgain.isDone(), "an oversized request waits until nothing is held");
    small.close();
    assertEquals(250, hugeAgain.get().bytes());
  }

  @Test
  void tryAcquireNeverWaits() {
    ByteBudget.Permit first = budget.acquire(95).toCompletableFuture().getNow(null);
    assertTrue(budget.tryAcquire(10).isEmpty());
    assertTrue(budget.tryAcquire(5).isPresent());
    assertTrue(timers.due.isEmpty(), "no timer for a request that cannot wait");
    first.close();
  }
}
