package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A connection's head deadline on a hand-moved scheduler: the first head is due within the
 * header-read timeout, none while a request is answered, the next within the idle timeout once
 * every response is out; a deadline expires once, and never after the connection ended.
 */
class HeadDeadlineTest {
  private static final Duration HEADER = Duration.ofSeconds(10);
  private static final Duration IDLE = Duration.ofSeconds(300);

  /** Runs a task when {@link #advance} passes its due time (a cancelled one never). */
  static final class HandScheduler implements Scheduler {
    private record Task(long due, Runnable run, CompletableFuture<Void> future) {}

    private final List<Task> tasks = new ArrayList<>();
    private long now;

    @Override
    public Future<?> schedule(Executor executor, Runnable command, long delay, TimeUnit unit) {
      Task t = new Task(now + unit.toNanos(delay), command, new CompletableFuture<>());
      tasks.add(t);
      return t.future;
    }

    void advance(Duration d) {
      now += d.toNanos();
      for (Task t : List.copyOf(tasks)) {
        if (t.due <= now) {
          tasks.remove(t);
          if (!t.future.isCancelled()) {
            t.run.run();
            t.future.complete(null);
          }
        }
      }
    }
  }

  private final HandScheduler scheduler = new HandScheduler();
  private final List<Boolean> expired = new ArrayList<>();
  private final HeadDeadline deadline = new HeadDeadline(scheduler, HEADER, IDLE);

  @Test
  void aConnectionThatSendsNoHeadExpiresAtTheHeaderReadTimeout() {
    deadline.start(expired::add);
    scheduler.advance(HEADER.minusNanos(1));
    assertEquals(List.of(), expired, "1 ns before");
    scheduler.advance(Duration.ofNanos(1));
    assertEquals(List.of(true), expired, "as the first request's head");
    scheduler.advance(IDLE.multipliedBy(2));
    assertEquals(List.of(true), expired, "once");
  }

  @Test
  void noDeadlineWhileAnsweringThenTheIdleTimeoutForTheNextHead() {
    deadline.start(expired::add);
    scheduler.advance(HEADER.minusNanos(1));
    deadline.requestArrived();
    scheduler.advance(IDLE.multipliedBy(10));
    assertEquals(List.of(), expired, "a waiter may wait: no deadline while its request is answered");
    deadline.responseSent();
    scheduler.advance(IDLE.minusNanos(1));
    assertEquals(List.of(), expired);
    scheduler.advance(Duration.ofNanos(1));
    assertEquals(List.of(false), expired, "as a later request's head");
  }

  @Test
  void aRequestThatArrivesBeforeTheLastResponseIsOutKeepsTheConnectionBusy() {
    deadline.start(expired::add);
    deadline.requestArrived();
    deadline.requestArrived(); // pipelined: the next head arrived while the first was answered
    deadline.responseSent();
    scheduler.advance(IDLE.multipliedBy(2));
    assertEquals(List.of(), expired, "one request still answered");
    deadline.responseSent();
    scheduler.advance(IDLE);
    assertEquals(List.of(false), expired);
  }

  @Test
  void anEndedConnectionNeverExpires() {
    deadline.start(expired::add);
    deadline.closed();
    scheduler.advance(HEADER.plus(IDLE));
    assertEquals(List.of(), expired);
    deadline.responseSent(); // a body that ends after its connection: arms nothing
    scheduler.advance(IDLE.multipliedBy(2));
    assertEquals(List.of(), expired);
  }
}
