package dev.corral.core.fetch;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.PriorityQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Core's copy of the testkit's {@code ManualScheduler} (core's tests cannot depend on the testkit,
 * which depends on the server): a task is due when the tests' {@link EntityTestBase.MovableTicker}
 * has moved by its delay, and runs, on the executor it was scheduled with, when the test advances
 * that ticker. {@code advance} returns once every task due by the new time has run to its end,
 * in the order they fall due; a task that throws makes it throw.
 */
final class ManualScheduler implements Scheduler {
  /** How long a due task may run before {@code advance} gives up on it (a probe, not a verdict). */
  private static final Duration TASK_LIMIT = Duration.ofSeconds(30);

  private final EntityTestBase.MovableTicker ticker;
  private final Object lock = new Object();
  private final PriorityQueue<Task> queue = new PriorityQueue<>();
  private long scheduled;

  ManualScheduler(EntityTestBase.MovableTicker ticker) {
    this.ticker = Objects.requireNonNull(ticker, "ticker");
    ticker.onAdvance(this::runDue);
  }

  @Override
  public Future<?> schedule(Executor executor, Runnable command, long delay, TimeUnit unit) {
    Objects.requireNonNull(executor, "executor");
    Objects.requireNonNull(command, "command");
    long nanos = Math.max(0, unit.toNanos(delay));
    Task task;
    synchronized (lock) {
      task = new Task(ticker.read() + nanos, nanos, scheduled++, executor, command);
      if (nanos > 0) {
        queue.add(task);
        return task;
      }
      task.state = State.RUNNING;
    }
    executor.execute(task::run); // due now: as a real scheduler would, without waiting
    return task;
  }

  /** Tasks scheduled and neither run nor cancelled. */
  int pending() {
    synchronized (lock) {
      return queue.size();
    }
  }

  /** Pending tasks that fall due within {@code d} of the ticker's now. */
  int dueWithin(Duration d) {
    long until = ticker.read() + d.toNanos();
    synchronized (lock) {
      return (int) queue.stream().filter(t -> t.due - until <= 0).count();
    }
  }

  /** Pending tasks scheduled with exactly {@code delay} (one kind of timer among the node's others). */
  int pendingWithDelay(Duration delay) {
    long nanos = delay.toNanos();
    synchronized (lock) {
      return (int) queue.stream().filter(t -> t.delay == nanos).count();
    }
  }

  /** Runs every task due by the ticker's now, one after the other, each to its end. */
  private void runDue() {
    List<Throwable> failures = new ArrayList<>();
    synchronized (this) { // one advance at a time
      while (true) {
        Task next;
        synchronized (lock) {
          next = queue.peek();
          if (next == null || next.due - ticker.read() > 0) {
            break;
          }
          queue.poll();
          next.state = State.RUNNING;
        }
        next.executor.execute(next::run);
        try {
          next.done.get(TASK_LIMIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
          failures.add(e.getCause());
        } catch (TimeoutException e) {
          throw new AssertionError("a task due at " + next.due + " did not end within " + TASK_LIMIT, e);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IllegalStateException(e);
        }
      }
    }
    if (!failures.isEmpty()) {
      AssertionError error = new AssertionError("a scheduled task failed", failures.get(0));
      failures.stream().skip(1).forEach(error::addSuppressed);
      throw error;
    }
  }

  private enum State { PENDING, RUNNING, CANCELLED }

  private final class Task implements Future<Void>, Comparable<Task> {
    final long due;
    final long delay;
    final long seq;
    final Executor executor;
    final Runnable command;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    State state = State.PENDING; // guarded by lock

    Task(long due, long delay, long seq, Executor executor, Runnable command) {
      this.due = due;
      this.delay = delay;
      this.seq = seq;
      this.executor = executor;
      this.command = command;
    }

    void run() {
      try {
        command.run();
        done.complete(null);
      } catch (Throwable t) {
        done.completeExceptionally(t);
      }
    }

    @Override
    public int compareTo(Task o) {
      int byDue = Long.compare(due - o.due, 0);
      return byDue != 0 ? byDue : Long.compare(seq, o.seq);
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      synchronized (lock) {
        if (state != State.PENDING) {
          return false;
        }
        state = State.CANCELLED;
        queue.remove(this);
      }
      done.cancel(false);
      return true;
    }

    @Override
    public boolean isCancelled() {
      synchronized (lock) {
        return state == State.CANCELLED;
      }
    }

    @Override
    public boolean isDone() {
      return done.isDone();
    }

    @Override
    public Void get() throws InterruptedException, ExecutionException {
      return done.get();
    }

    @Override
    public Void get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
      return done.get(timeout, unit);
    }
  }
}
