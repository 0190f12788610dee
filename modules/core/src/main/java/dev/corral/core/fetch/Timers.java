package dev.corral.core.fetch;

import com.github.benmanes.caffeine.cache.Scheduler;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The scheduler of a running node's waiter timers ({@link Node#scheduler()}): each waiter's budget,
 * the re-ask of an unanswered ask and the pauses before asking a stopped entity again; the front
 * door's connection deadlines use it too.
 *
 * <p>Caffeine's {@link Scheduler} SPI, which core already uses for its {@code Ticker}: a scheduler
 * only hands a due task to the executor it was given, so the task itself runs where the caller
 * says (the node's I/O pool). Tests pass a manual one that runs due tasks when its ticker moves.
 */
public final class Timers {
  private Timers() {}

  /**
   * One daemon thread for all the timers of the JVM (as many nodes as it runs), in wall time;
   * a cancelled timer (an answered waiter's budget) is removed from its queue at once, so the
   * queue holds only live timers. Not {@link Scheduler#systemScheduler()}: cancelling one of
   * its futures leaves the delayed task queued until it is due.
   */
  public static Scheduler system() {
    return Holder.SCHEDULER;
  }

  private static final class Holder {
    static final Scheduler SCHEDULER = Scheduler.forScheduledExecutorService(timers());

    private static ScheduledThreadPoolExecutor timers() {
      ScheduledThreadPoolExecutor timers = new ScheduledThreadPoolExecutor(1, r -> {
        Thread t = new Thread(r, "corral-waiter-timers");
        t.setDaemon(true);
        return t;
      });
      timers.setRemoveOnCancelPolicy(true);
      return timers;
    }
  }
}
