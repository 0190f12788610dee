package dev.corral.it;

import dev.corral.testkit.Await;
import dev.corral.testkit.RawHttp;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * A load balancer's rotation for the rolling-restart tests: the nodes in it, round-robin, and
 * how many requests each one has in flight. A node leaves the rotation before its SIGTERM and
 * rejoins it, as a new incarnation, once ready.
 */
final class Rotation {
  private final int nodes;
  private final AtomicIntegerArray in;
  private final AtomicIntegerArray inFlight;
  private final AtomicReferenceArray<String> base;
  private final AtomicIntegerArray incarnation;
  private final AtomicLong next = new AtomicLong();

  Rotation(int nodes) {
    this.nodes = nodes;
    in = new AtomicIntegerArray(nodes);
    inFlight = new AtomicIntegerArray(nodes);
    base = new AtomicReferenceArray<>(nodes);
    incarnation = new AtomicIntegerArray(nodes);
  }

  /** Puts {@code node} (a new incarnation of it) in, at {@code url}. */
  void add(int node, String url) {
    base.set(node, url);
    incarnation.incrementAndGet(node);
    in.set(node, 1);
  }

  /** Takes a node out; returns once none of its requests is in flight (or fails after the timeout). */
  void remove(int node, Duration timeout) throws Exception {
    in.set(node, 0);
    Await.until(timeout, () -> "node-" + (node + 1) + " still has " + inFlight.get(node) + " requests in flight",
        () -> inFlight.get(node) == 0);
  }

  /** Picks the next node in rotation and counts a request on it; -1 when none is in. */
  int acquire() {
    for (int attempt = 0; attempt < 2 * nodes; attempt++) {
      int node = (int) (next.getAndIncrement() % nodes);
      if (in.get(node) == 1) {
        inFlight.incrementAndGet(node);
        if (in.get(node) == 1) {
          return node;
        }
        inFlight.decrementAndGet(node); // removed meanwhile: not sent
      }
    }
    return -1;
  }

  /** The request {@link #acquire} counted on {@code node} has ended. */
  void release(int node) {
    inFlight.decrementAndGet(node);
  }

  /** Where {@code node} is now. */
  String base(int node) {
    return base.get(node);
  }

  /**
   * One load thread's kept-alive connections, one per node. A connection made to an earlier
   * incarnation of a node is never reused: the JDK client would silently send a GET again when its
   * connection closes before the response, so the tests keep their own raw connections.
   */
  final class Connections implements AutoCloseable {
    private final RawHttp[] open = new RawHttp[nodes];
    private final int[] reached = new int[nodes];
    private final Duration readTimeout;

    Connections(Duration readTimeout) {
      this.readTimeout = readTimeout;
    }

    /** A connection to {@code node}'s current incarnation, opened when there is none to reuse. */
    RawHttp to(int node) throws IOException {
      RawHttp c = open[node];
      if (c == null || reached[node] != incarnation.get(node) || !c.reusable()) {
        if (c != null) {
          c.close();
        }
        reached[node] = incarnation.get(node);
        URI at = URI.create(base.get(node));
        c = open[node] = RawHttp.keepAlive(new InetSocketAddress(at.getHost(), at.getPort()), readTimeout);
      }
      return c;
    }

    /** Closes {@code node}'s connection after a failed request: the next one opens a new one. */
    void drop(int node) {
      if (open[node] != null) {
        open[node].close();
        open[node] = null;
      }
    }

    @Override
    public void close() {
      for (int node = 0; node < nodes; node++) {
        drop(node);
      }
    }
  }
}
