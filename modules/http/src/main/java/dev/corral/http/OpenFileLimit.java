package dev.corral.http;

import java.lang.management.ManagementFactory;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The process's open-file limit, checked against the connection cap at bind time: a cap the
 * limit cannot hold means accept errors ({@code Too many open files}) instead of connections
 * waiting in the backlog, so the node says so once, at start.
 */
final class OpenFileLimit {
  private static final Logger log = LoggerFactory.getLogger(OpenFileLimit.class);
  /** Descriptors a node needs besides client connections: jars, store files, database, cluster, upstream pools. */
  static final int RESERVE = 512;

  private OpenFileLimit() {}

  /** This process's limit, when the platform tells it. */
  static OptionalLong current() {
    if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
      return OptionalLong.of(unix.getMaxFileDescriptorCount());
    }
    return OptionalLong.empty();
  }

  static void warnIfBelow(int maxConnections) {
    OptionalLong limit = current();
    if (limit.isPresent() && limit.getAsLong() < (long) maxConnections + RESERVE) {
      log.warn("the open-file limit ({}) is below max-connections ({}) + {} for the node's own files: raise it"
          + " (ulimit -n, LimitNOFILE) or lower --max-connections, or clients past the limit get accept errors",
          limit.getAsLong(), maxConnections, RESERVE);
    }
  }
}
