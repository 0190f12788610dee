package dev.corral.http;

/**
 * How one open connection is ended the graceful way when its node stops
 * ({@link FrontDoor#closeConnections}). The way depends on the protocol, which a TLS connection
 * learns only from its handshake: HTTP/1.1 reads no further request, sends the response on its
 * way whole, then closes; HTTP/2 sends GOAWAY, lets its streams end, then closes; a connection
 * whose protocol is not known yet has no response on its way and is simply cut.
 *
 * <p>Thread-safe: {@link #endBy} (from the connection's stream) may race {@link #end} (from the
 * stop); the new way then runs at least once, and each way may run twice, which ending allows.
 */
final class ConnectionEnd {
  private volatile Runnable how;
  private volatile boolean ending;

  ConnectionEnd(Runnable how) {
    this.how = how;
  }

  /** From now on the connection is ended by {@code how}; at once if its end has begun. */
  void endBy(Runnable how) {
    this.how = how;
    if (ending) {
      how.run();
    }
  }

  /** Ends the connection (the graceful way, once its protocol is known). */
  void end() {
    ending = true;
    how.run();
  }
}
