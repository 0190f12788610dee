package dev.corral.http;

import java.time.Duration;
import java.util.Objects;

/**
 * What the front door allows each client connection (docs/security.md, "Bounded connections").
 *
 * @param maxConnections connections held at once; further ones wait in the kernel's accept
 *     backlog (they take no descriptor of this process) until one ends
 * @param headerReadTimeout time from a connection's start to its first request head being
 *     complete; a connection that sends nothing, or trickles its head, is closed when it runs out
 * @param idleTimeout how long a connection may sit between requests, and also the most the next
 *     request's head may take once the previous response has been sent
 */
public record ConnectionLimits(int maxConnections, Duration headerReadTimeout, Duration idleTimeout) {
  public ConnectionLimits {
    if (maxConnections < 1) {
      throw new IllegalArgumentException("maxConnections must be at least 1");
    }
    Objects.requireNonNull(headerReadTimeout, "headerReadTimeout");
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    if (headerReadTimeout.isNegative() || headerReadTimeout.isZero() || idleTimeout.isNegative() || idleTimeout.isZero()) {
      throw new IllegalArgumentException("timeouts must be more than 0");
    }
  }
}
