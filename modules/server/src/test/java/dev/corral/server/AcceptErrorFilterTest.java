package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Pekko's accept errors (the TCP listener retrying {@code accept()} without pause while the
 * process is out of descriptors) become at most one line a second with a count; everything else
 * passes untouched. Time is a hand-moved ticker.
 */
class AcceptErrorFilterTest {
  private final AtomicLong nanos = new AtomicLong(1_000);
  private final LoggerContext context = new LoggerContext();
  private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
  private Logger listener;

  @BeforeEach
  void setUp() {
    AcceptErrorFilter filter = new AcceptErrorFilter(nanos::get);
    filter.setContext(context);
    filter.start();
    context.addTurboFilter(filter);
    lines.setContext(context);
    lines.start();
    context.getLogger(Logger.ROOT_LOGGER_NAME).addAppender(lines);
    listener = context.getLogger(AcceptErrorFilter.LISTENER);
  }

  private void acceptError() {
    // as Pekko's Slf4jLogger writes TcpListener's log.error(e, "Accept error: ...")
    listener.error("Accept error: could not accept new connection", new IOException("Too many open files"));
  }

  @Test
  void aFloodOfAcceptErrorsIsOneLineASecondWithTheCount() {
    for (int i = 0; i < 10_000; i++) {
      acceptError();
    }
    assertEquals(1, lines.list.size(), "the first error is reported at once, the rest of the second not");
    ILoggingEvent first = lines.list.get(0);
    assertEquals(AcceptErrorFilter.class.getName(), first.getLoggerName());
    assertTrue(first.getFormattedMessage().contains("Too many open files"), first.getFormattedMessage());
    assertTrue(first.getFormattedMessage().contains("(1 accept error since"), first.getFormattedMessage());
    assertEquals(null, first.getThrowableProxy(), "no stack trace");

    nanos.addAndGet(Duration.ofSeconds(1).toNanos() - 1);
    acceptError();
    assertEquals(1, lines.list.size(), "1 ns before the second is over: still counted, not written");

    nanos.addAndGet(1);
    acceptError();
    assertEquals(2, lines.list.size());
    assertTrue(lines.list.get(1).getFormattedMessage().contains("(10001 accept errors since the last report"),
        lines.list.get(1).getFormattedMessage());

    nanos.addAndGet(Duration.ofSeconds(60).toNanos());
    acceptError();
    assertTrue(lines.list.get(2).getFormattedMessage().contains("(1 accept error since"),
        lines.list.get(2).getFormattedMessage());
  }

  @Test
  void otherLinesOfTheListenerAndOtherLoggersPassUntouched() {
    listener.error("Bind failed for TCP channel on endpoint [{}]", "127.0.0.1:1");
    Logger other = context.getLogger("org.apache.pekko.http.Other");
    other.error("Accept error: not the listener's");
    acceptError();
    List<String> messages = lines.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    assertEquals(3, messages.size(), messages.toString());
    assertEquals("Bind failed for TCP channel on endpoint [127.0.0.1:1]", messages.get(0));
    assertEquals("Accept error: not the listener's", messages.get(1));
    assertTrue(listener.isErrorEnabled(), "a level check alone is not filtered (Pekko asks it before logging)");
  }
}
