package dev.corral.testkit;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Bounded probes, not assertions about time: each waits until a state is reached (waiters
 * registered, a fetch ended, a file written, an endpoint up) and fails only when it never is
 * within a generous limit. A verdict never depends on how soon the state came. In-JVM tests prefer
 * latches a fake upstream counts down; these polls are for state that cannot signal one.
 */
public final class Await {
  private Await() {}

  /** Polls {@code condition} every 2 ms until it holds; fails naming {@code what} after {@code limit}. */
  public static void until(String what, Duration limit, BooleanSupplier condition) {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("timed out after " + limit + " waiting until " + what);
      }
      pause(2);
    }
  }

  /**
   * Polls {@code condition} every 10 ms until it holds; fails with {@code why} (computed only
   * then, e.g. a process's captured output) after {@code timeout}. For things outside this JVM.
   */
  public static void until(Duration timeout, Supplier<String> why, Callable<Boolean> condition) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.call()) {
      if (System.nanoTime() - deadline > 0) {
        throw new AssertionError("not within " + timeout + ": " + why.get());
      }
      pause(10);
    }
  }

  /** Waits for a latch (a fake upstream counts it down), failing after 20 s. */
  public static void latch(CountDownLatch latch) throws InterruptedException {
    if (!latch.await(20, TimeUnit.SECONDS)) {
      throw new AssertionError("latch not released");
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
