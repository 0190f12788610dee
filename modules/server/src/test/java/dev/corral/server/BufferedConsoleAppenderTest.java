package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The access log's appender: lines are written in batches of whole lines, never one system call
 * per line, and none is kept longer than the flush interval or past the appender's stop.
 */
class BufferedConsoleAppenderTest {
  /** Records each write the appender makes to standard output. */
  private static final class Writes extends OutputStream {
    final List<String> writes = new ArrayList<>();

    @Override
    public synchronized void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      writes.add(new String(b, off, len, StandardCharsets.UTF_8));
    }

    synchronized List<String> all() {
      return List.copyOf(writes);
    }
  }

  /**
   * The flusher's executor with a hand-moved time: a task scheduled with a fixed delay runs, on
   * the test's thread, each time {@link #advance} reaches its due time. Only what the appender
   * uses is there.
   */
  static final class HandFlusher extends AbstractExecutorService implements ScheduledExecutorService {
    private final List<Periodic> tasks = new ArrayList<>();
    private long now;
    private boolean shutdown;

    private final class Periodic extends CompletableFuture<Void> implements ScheduledFuture<Void> {
      final Runnable command;
      final long delay;
      long due;

      Periodic(Runnable command, long due, long delay) {
        this.command = command;
        this.due = due;
        this.delay = delay;
      }

      @Override
      public long getDelay(TimeUnit unit) {
        return unit.convert(due - now, TimeUnit.NANOSECONDS);
      }

      @Override
      public int compareTo(Delayed o) {
        return Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS));
      }
    }

    /** Moves time on by {@code d}, running each periodic task every time its due time is reached. */
    void advance(Duration d) {
      long until = now + d.toNanos();
      while (true) {
        Periodic next = tasks.stream().filter(t -> !t.isCancelled() && t.due <= until)
            .min((a, b) -> Long.compare(a.due, b.due)).orElse(null);
        if (next == null || shutdown) {
          break;
        }
        now = next.due;
        next.command.run();
        next.due = now + next.delay;
      }
      now = until;
    }

    @Override
    public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
      Periodic p = new Periodic(command, now + unit.toNanos(initialDelay), unit.toNanos(delay));
      tasks.add(p);
      return p;
    }

    @Override
    public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }

    @Override
    public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }

    @Override
    public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void execute(Runnable command) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void shutdown() {
      shutdown = true;
    }

    @Override
    public List<Runnable> shutdownNow() {
      shutdown = true;
      return List.of();
    }

    @Override
    public boolean isShutdown() {
      return shutdown;
    }

    @Override
    public boolean isTerminated() {
      return shutdown;
    }

    @Override
    public boolean awaitTermination(long timeout, TimeUnit unit) {
      return shutdown;
    }
  }

  private final LoggerContext context = new LoggerContext();
  private final Writes out = new Writes();

  private Logger logger(BufferedConsoleAppender appender, int bufferSize, long flushMillis) {
    context.setMDCAdapter(new LogbackMDCAdapter());
    PatternLayoutEncoder encoder = new PatternLayoutEncoder();
    encoder.setContext(context);
    encoder.setPattern("%msg%n");
    encoder.start();
    appender.setContext(context);
    appender.setEncoder(encoder);
    appender.setBufferSize(bufferSize);
    appender.setFlushMillis(flushMillis);
    appender.start();
    Logger logger = context.getLogger("corral.access");
    logger.setAdditive(false);
    logger.addAppender(appender);
    return logger;
  }

  @Test
  void linesAreWrittenInBatchesOfWholeLinesAndAllOfThemAtStop() {
    BufferedConsoleAppender appender = new BufferedConsoleAppender(out);
    Logger log = logger(appender, 100, TimeUnit.HOURS.toMillis(1));
    for (int i = 0; i < 10; i++) {
      log.info("GET repo=bench path=/bench/{} status=200", i); // 40 bytes with its newline
    }
    List<String> before = out.all();
    assertEquals(4, before.size(), "two lines fit in 100 bytes: written when the third did not fit: " + before);
    for (String w : before) {
      assertTrue(w.endsWith("\n") && w.split("\n").length == 2, "whole lines only: " + w);
    }
    appender.stop();
    String all = String.join("", out.all());
    for (int i = 0; i < 10; i++) {
      assertTrue(all.contains("path=/bench/" + i + " "), "line " + i + " written by stop: " + all);
    }
    assertEquals(10, all.split("\n").length);
  }

  @Test
  void aLineIsWrittenWithinTheFlushIntervalWithoutMoreTraffic() {
    HandFlusher flusher = new HandFlusher();
    BufferedConsoleAppender appender = new BufferedConsoleAppender(out, () -> flusher);
    Logger log = logger(appender, 64 * 1024, 50);
    log.info("GET repo=bench path=/bench/one status=200");
    flusher.advance(Duration.ofMillis(49));
    assertEquals(List.of(), out.all(), "buffered until the flush interval has passed");
    flusher.advance(Duration.ofMillis(1));
    assertEquals(List.of("GET repo=bench path=/bench/one status=200\n"), out.all(), "written once it has");

    // And so on, interval after interval.
    log.info("GET repo=bench path=/bench/two status=200");
    flusher.advance(Duration.ofMillis(49));
    assertEquals(1, out.all().size(), "the second line waits for the next flush");
    flusher.advance(Duration.ofMillis(1));
    assertEquals(List.of("GET repo=bench path=/bench/one status=200\n", "GET repo=bench path=/bench/two status=200\n"),
        out.all());

    appender.stop();
    assertTrue(flusher.isShutdown(), "stop ends the flusher");
  }
}
