package dev.corral.it;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/** Bounded polls of things outside this JVM (files, endpoints) that cannot signal a latch. */
final class Await {
  private Await() {}

  /** Polls {@code condition} every 10 ms until it holds; fails with {@code why} after {@code timeout}. */
  static void until(Duration timeout, Supplier<String> why, Callable<Boolean> condition) throws Exception {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!condition.call()) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("not within " + timeout + ": " + why.get());
      }
      Thread.sleep(10);
    }
  }
}
