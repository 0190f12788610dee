package dev.corral.http;

import dev.corral.core.wait.CancelRegistry;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Executor;
import org.apache.pekko.http.javadsl.model.AttributeKey;

/**
 * The waiters of one client connection. When the connection terminates, every waiter still
 * registered is cancelled through the node's {@link CancelRegistry}, so it returns at once
 * instead of waiting for a shared fetch nobody will read (SEMANTICS C1, C2).
 */
final class ConnectionScope {
  static final AttributeKey<ConnectionScope> KEY = AttributeKey.create("corral-connection", ConnectionScope.class);

  private final CancelRegistry cancels;
  private final Set<Long> tokens = new HashSet<>();
  private boolean closed;

  ConnectionScope(CancelRegistry cancels) {
    this.cancels = cancels;
  }

  /** Reserves a token for a waiter of this connection; already cancelled if the connection is gone. */
  long reserve() {
    long token = cancels.reserve();
    boolean gone;
    synchronized (this) {
      gone = closed;
      if (!gone) {
        tokens.add(token);
      }
    }
    if (gone) {
      cancels.cancel(token); // leaves a tombstone: the registration that follows is answered at once
    }
    return token;
  }

  void done(long token) {
    synchronized (this) {
      tokens.remove(token);
    }
  }

  /**
   * The connection terminated: cancel whatever still waits. The cancels (whose callbacks answer
   * the waiters' requests) run on {@code forWaiters}; a connection with no waiter hands nothing
   * over.
   */
  void closed(Executor forWaiters) {
    Long[] waiting;
    synchronized (this) {
      closed = true;
      if (tokens.isEmpty()) {
        return;
      }
      waiting = tokens.toArray(new Long[0]);
      tokens.clear();
    }
    forWaiters.execute(() -> {
      for (Long t : waiting) {
        cancels.cancel(t);
      }
    });
  }
}
