package dev.corral.server;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.time.Duration;
import java.util.function.LongSupplier;
import org.slf4j.LoggerFactory;
import org.slf4j.Marker;

/**
 * Turns Pekko's accept errors into at most one log line a second, with a count. When the process
 * runs out of descriptors, Pekko's TCP listener fails {@code accept()}, logs the error with its
 * stack trace, and tries again at once, as long as the connection waits in the backlog: hundreds
 * of megabytes of {@code Too many open files} traces in seconds. This filter drops those lines
 * and writes one of its own per second saying how many there were and what to do. Installed in
 * logback.xml as a turbo filter.
 */
public final class AcceptErrorFilter extends TurboFilter {
  /** Where Pekko logs them: {@code TcpListener.acceptAllPending}. */
  static final String LISTENER = "org.apache.pekko.io.TcpListener";
  static final String ACCEPT_ERROR = "Accept error";

  private final ErrorBurst burst;
  private volatile org.slf4j.Logger report;

  public AcceptErrorFilter() {
    this(System::nanoTime);
  }

  AcceptErrorFilter(LongSupplier nanos) {
    this.burst = new ErrorBurst(nanos, Duration.ofSeconds(1));
  }

  @Override
  public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
    // format is null when only the level is asked (isErrorEnabled): the line must still reach us
    if (format == null || !format.startsWith(ACCEPT_ERROR) || !logger.getName().equals(LISTENER)) {
      return FilterReply.NEUTRAL;
    }
    long n = burst.count();
    if (n > 0) {
      reportLogger().error("cannot accept connections: {} ({} accept error{} since the last report; at most one"
              + " report a second). Raise the open-file limit (ulimit -n) or lower --max-connections",
          t == null ? "unknown cause" : t.getMessage(), n, n == 1 ? "" : "s");
    }
    return FilterReply.DENY;
  }

  private org.slf4j.Logger reportLogger() {
    org.slf4j.Logger l = report;
    if (l == null) {
      l = getContext() instanceof ch.qos.logback.classic.LoggerContext c
          ? c.getLogger(AcceptErrorFilter.class) : LoggerFactory.getLogger(AcceptErrorFilter.class);
      report = l;
    }
    return l;
  }
}
