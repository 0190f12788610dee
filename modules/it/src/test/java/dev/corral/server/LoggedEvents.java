package dev.corral.server;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.ArrayList;
import java.util.List;

/** What a test's {@link ListAppender} has caught so far. */
final class LoggedEvents {
  private LoggedEvents() {}

  /**
   * A copy of the appender's events, taken under the lock its appends hold (logback's {@code
   * AppenderBase.doAppend} is synchronized): reading its list while a node's threads log into it
   * (another test class runs alongside) fails with a ConcurrentModificationException.
   */
  static List<ILoggingEvent> of(ListAppender<ILoggingEvent> appender) {
    synchronized (appender) {
      return new ArrayList<>(appender.list);
    }
  }
}
