package dev.corral.server;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * Lines to standard output through a buffer: written when the buffer is full, at least every
 * {@code flushMillis} (default 1000) and when the JVM exits, instead of one write system call per
 * line as logback's ConsoleAppender makes. For the access log, one line per request: at a warm
 * hit's rate those calls were 7.7% of the node's CPU (docs/benchmarks.md). The buffer only
 * ever holds whole lines (a line that does not fit is written after what is buffered), so lines
 * of other appenders on the same output never land inside one of its lines. Configured in
 * logback.xml: {@code bufferSize} (bytes, default 65536) and {@code flushMillis}. The access
 * log's own file ({@code --access-log FILE}) is written the same way: {@link #appendingTo}.
 */
public final class BufferedConsoleAppender extends OutputStreamAppender<ILoggingEvent> {
  private int bufferSize = 64 * 1024;
  private long flushMillis = 1000;
  private ScheduledExecutorService flusher;
  private Thread atExit;
  /** Where the lines go: standard output, a file, or a test's stream. */
  private final OutputStream sink;
  /** Whether stopping closes the sink (a file of ours); standard output stays open. */
  private final boolean ownsSink;
  /** Makes what runs the periodic flush at each start: a daemon thread of its own; a test's hand-moved one. */
  private final Supplier<ScheduledExecutorService> flushers;

  public BufferedConsoleAppender() {
    this(new FileOutputStream(FileDescriptor.out));
  }

  BufferedConsoleAppender(OutputStream sink) {
    this(sink, BufferedConsoleAppender::flushThread);
  }

  BufferedConsoleAppender(OutputStream sink, Supplier<ScheduledExecutorService> flushers) {
    this(sink, false, flushers);
  }

  private BufferedConsoleAppender(OutputStream sink, boolean ownsSink, Supplier<ScheduledExecutorService> flushers) {
    this.sink = sink;
    this.ownsSink = ownsSink;
    this.flushers = flushers;
  }

  /**
   * Lines appended to {@code file} (created if missing, never truncated). The file is opened in
   * append mode (O_APPEND): after an external tool truncates it in place (logrotate's
   * copytruncate) lines go on at its new end; a renamed file keeps being written until a restart.
   */
  static BufferedConsoleAppender appendingTo(java.nio.file.Path file) throws IOException {
    return new BufferedConsoleAppender(new FileOutputStream(file.toFile(), true), true, BufferedConsoleAppender::flushThread);
  }

  private static ScheduledExecutorService flushThread() {
    return Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "corral-log-flush");
      t.setDaemon(true);
      return t;
    });
  }

  public void setBufferSize(int bufferSize) {
    this.bufferSize = bufferSize;
  }

  public void setFlushMillis(long flushMillis) {
    this.flushMillis = flushMillis;
  }

  @Override
  public void start() {
    if (bufferSize < 1 || flushMillis < 1) {
      addError("bufferSize and flushMillis must be positive");
      return;
    }
    // Standard output itself must stay open when the appender stops.
    OutputStream stdout = new FilterOutputStream(sink) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        out.write(b, off, len);
      }

      @Override
      public void close() throws IOException {
        if (ownsSink) {
          super.close();
        } else {
          flush();
        }
      }
    };
    setOutputStream(new BufferedOutputStream(stdout, bufferSize));
    setImmediateFlush(false);
    super.start();
    flusher = flushers.get();
    flusher.scheduleWithFixedDelay(this::flushNow, flushMillis, flushMillis, TimeUnit.MILLISECONDS);
    atExit = new Thread(this::flushNow, "corral-log-flush-at-exit");
    Runtime.getRuntime().addShutdownHook(atExit);
  }

  @Override
  public void stop() {
    if (flusher != null) {
      flusher.shutdownNow();
      flusher = null;
    }
    if (atExit != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(atExit);
      } catch (IllegalStateException exiting) {
        // the hook runs (or ran) anyway
      }
      atExit = null;
    }
    flushNow();
    super.stop();
  }

  /** Writes out what is buffered. */
  void flushNow() {
    streamWriteLock.lock();
    try {
      OutputStream out = getOutputStream();
      if (out != null) {
        out.flush();
      }
    } catch (IOException e) {
      addError("could not flush standard output", e);
    } finally {
      streamWriteLock.unlock();
    }
  }
}
