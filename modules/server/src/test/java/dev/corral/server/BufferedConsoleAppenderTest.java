package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
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
    final CountDownLatch firstWrite = new CountDownLatch(1);

    @Override
    public synchronized void write(int b) {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      writes.add(new String(b, off, len, StandardCharsets.UTF_8));
      firstWrite.countDown();
    }

    synchronized List<String> all() {
      return List.copyOf(writes);
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
  void aLineIsWrittenWithinTheFlushIntervalWithoutMoreTraffic() throws Exception {
    BufferedConsoleAppender appender = new BufferedConsoleAppender(out);
    Logger log = logger(appender, 64 * 1024, 50);
    log.info("GET repo=bench path=/bench/one status=200");
    assertTrue(out.firstWrite.await(10, TimeUnit.SECONDS), "the flusher wrote the buffered line");
    assertEquals(List.of("GET repo=bench path=/bench/one status=200\n"), out.all());
    appender.stop();
  }
}
