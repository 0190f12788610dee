package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A connection's head deadline on a hand-moved scheduler: the first head is due within the
 * header-read timeout, none while a request is answered, the next within the idle timeout once
 * every response is out; a deadline expires once, and never after the connection ended. And the
 * node's count of connections answering, which a graceful stop waits on.
 */
class HeadDeadlineTest {
  private static final Duration HEADER = Duration.ofSeconds(10);
  private static final Duration IDLE = Duration.ofSeconds(300);

  /** Runs a task when {@link #advance} passes its due time (a cancelled one never); its time is the ticker's. */
  static final class HandScheduler implements Scheduler, Ticker {
    private record Task(long due, Runnable run, CompletableFuture<Void> future) {}

    private final List<Task> tasks = new ArrayList<>();
    private long now;
    int scheduled;

    @Override
    public long read() {
      return now;
    }

    @Override
    public Future<?> schedule(Executor executor, Runnable command, long delay, TimeUnit unit) {
      scheduled++;
      Task t = new Task(now + unit.toNanos(delay), command, new CompletableFuture<>());
      tasks.add(t);
      return t.future;
    }

    /** Moves time on by {@code d}, running each task as its due time is reached, in due order. */
    void advance(Duration d) {
      long until = now + d.toNanos();
      while (true) {
        Task next = tasks.stream().filter(t -> t.due <= until).min((a, b) -> Long.compare(a.due, b.due)).orElse(null);
        if (next == null) {
          break;
        }
        tasks.remove(next);
        now = Math.max(now, next.due);
        if (!next.future.isCancelled()) {
          next.run.run();
          next.future.complete(null);
        }
      }
      now = until;
    }
  }

  private final HandScheduler scheduler = new HandScheduler();
  private final List<Boolean> expired = new ArrayList<>();
  private final AtomicInteger answering = new AtomicInteger();
  private final HeadDeadline deadline = new HeadDeadline(scheduler, scheduler, HEADER, IDLE, answering);

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

  @Test
  void theIdleTimeoutCountsFromTheLastResponseEvenWhenAnEarlierTimerIsStillPending() {
    deadline.start(expired::add);
    scheduler.advance(Duration.ofSeconds(1));
    deadline.requestArrived();
    scheduler.advance(Duration.ofSeconds(1));
    deadline.responseSent(); // the next head is due at 2 s + IDLE; the header-read timer is pending for 10 s
    scheduler.advance(IDLE.minusNanos(1));
    assertEquals(List.of(), expired, "1 ns before the idle timeout measured from the response");
    scheduler.advance(Duration.ofNanos(1));
    assertEquals(List.of(false), expired);
  }

  @Test
  void aKeepAliveConnectionsRequestsScheduleNoTimerEach() {
    deadline.start(expired::add);
    for (int i = 0; i < 1000; i++) {
      deadline.requestArrived();
      scheduler.advance(Duration.ofMillis(1));
      deadline.responseSent();
    }
    assertEquals(1, scheduler.scheduled, "the header-read timer only: the deadline moves, the timer stays");
    scheduler.advance(IDLE);
    assertEquals(List.of(false), expired, "and the deadline still holds, from the last response");
    assertEquals(2, scheduler.scheduled, "one more when the first timer found the deadline moved on");
  }

  /**
   * A closed connection's timer may stay queued until it is due (a scheduler that keeps cancelled
   * tasks, as Caffeine's system scheduler does): it must not keep what expires the connection,
   * which reaches the connection's whole stream, in memory until then.
   */
  @Test
  void aClosedConnectionIsNotKeptInMemoryByItsQueuedTimer() {
    HandScheduler scheduler = new HandScheduler();
    HeadDeadline deadline = new HeadDeadline(scheduler, scheduler, HEADER, IDLE, new AtomicInteger());
    java.util.function.Consumer<Boolean> expire = new java.util.function.Consumer<>() {
      final byte[] stream = new byte[1 << 20];

      @Override
      public void accept(Boolean first) {
        stream[0] = 1;
      }
    };
    java.lang.ref.WeakReference<Object> connection = new java.lang.ref.WeakReference<>(expire);
    deadline.start(expire);
    deadline.requestArrived();
    deadline.responseSent(); // the idle timeout's timer is queued
    deadline.closed();
    expire = null;
    for (int i = 0; i < 20 && connection.get() != null; i++) {
      System.gc();
    }
    assertEquals(null, connection.get(), "the closed connection is still reachable from its queued timer");
    java.lang.ref.Reference.reachabilityFence(deadline);
    java.lang.ref.Reference.reachabilityFence(scheduler);
  }

  /**
   * A connection counts as answering from a request's arrival until its last response is sent,
   * pipelined requests and all: a graceful stop must not see it idle in between (a response
   * answered but whose streamed body Pekko has not begun was counted nowhere before).
   */
  @Test
  void aConnectionCountsAsAnsweringFromItsRequestUntilItsLastResponseIsSent() {
    AtomicInteger node = new AtomicInteger();
    HeadDeadline other = new HeadDeadline(scheduler, scheduler, HEADER, IDLE, node);
    HeadDeadline mine = new HeadDeadline(scheduler, scheduler, HEADER, IDLE, node);
    mine.start(expired::add);
    other.start(expired::add);
    assertEquals(0, node.get(), "no request yet");
    mine.requestArrived();
    assertEquals(1, node.get(), "a request arrived");
    mine.requestArrived(); // pipelined (or an HTTP/2 stream)
    other.requestArrived();
    assertEquals(2, node.get(), "two connections answering, one of them two requests");
    mine.responseSent();
    assertEquals(2, node.get(), "one response of two sent");
    mine.responseSent();
    assertEquals(1, node.get(), "every response of the connection sent");
    mine.responseSent(); // a stray one (Pekko's 500 after a failure) counts nothing twice
    assertEquals(1, node.get());
    other.responseSent();
    assertEquals(0, node.get());
    mine.requestArrived();
    assertEquals(1, node.get(), "the next request on a keep-alive connection");
  }

  /** A response whose body is never begun (its client gone) is let go when its connection ends. */
  @Test
  void aClosedConnectionNoLongerCountsAsAnswering() {
    deadline.start(expired::add);
    deadline.requestArrived();
    deadline.requestArrived();
    assertEquals(1, answering.get());
    deadline.closed();
    assertEquals(0, answering.get(), "released by the end of the connection");
    deadline.responseSent();
    deadline.closed();
    deadline.requestArrived();
    assertEquals(0, answering.get(), "nothing counted after the end, nothing released twice");
  }
}
