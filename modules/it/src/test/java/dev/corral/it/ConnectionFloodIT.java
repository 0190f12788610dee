package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Issue 12, bounded connections, on a real node process over loopback: thousands of half-open
 * connections (sending nothing, or a request head that never ends) neither take the node's
 * descriptors past its connection cap nor keep a new client from being served, and a node that
 * does run out of descriptors logs it at most once a second instead of hundreds of megabytes of
 * traces. The header-read timeout itself is {@link SlowHeadIT}'s.
 */
@Isolated("its flood must outpace the node's header-read timeout, and it holds thousands of descriptors in this JVM")
class ConnectionFloodIT {
  private static final int FLOOD = 6_000;
  private static final int CAP = 4_096;
  /** Descriptors the node may hold beyond the cap and what it held before the flood (threads' pipes, pools, logs). */
  private static final int MARGIN = 100;
  private static final long LOG_LIMIT = 1_000_000;

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  @Test
  void sixThousandHalfOpenConnectionsStayWithinTheCapAndANewClientIsServed() throws Exception {
    long ours = Descriptors.limit(ProcessHandle.current().pid());
    int flood = FLOOD;
    int cap = CAP;
    if (ours < FLOOD + 1_000) {
      // A machine whose hard limit cannot hold the flood: the same test, scaled to the limit.
      flood = (int) Math.max(200, ours - 1_000);
      cap = flood * 2 / 3;
      System.err.println("ConnectionFloodIT: this JVM's open-file limit is " + ours + " (ulimit -Hn): flooding with "
          + flood + " connections against a cap of " + cap + " instead of " + FLOOD + " against " + CAP
          + "; raise the hard limit to run it at full size");
    }
    CorralProcess node = processes.serve("flood", List.of(), temp.resolve("data"),
        List.of("--header-read-timeout", "10s", "--max-connections", String.valueOf(cap)));
    String base = node.awaitListening(Duration.ofSeconds(60));
    long nodeLimit = Descriptors.limit(node.pid());
    assertTrue(nodeLimit >= cap + Descriptors.NODE_BASE_MAX,
        "the node's open-file limit " + nodeLimit + " cannot hold the cap " + cap + " (raise ulimit -Hn)");
    assertEquals(200, Http.getBytes(base + "/-/health/ready").statusCode());
    int before = Descriptors.count(node.pid());

    DescriptorPeak peak = DescriptorPeak.start(node.pid());
    try (HalfOpen half = HalfOpen.open(Loopback.port(base), flood)) {
      assertTrue(half.connected() >= cap, "at least the cap's worth connected: " + half.connected() + " of " + flood);
      int full = before + cap - MARGIN;
      Probe.until(Duration.ofSeconds(60), () -> Descriptors.count(node.pid()) >= full,
          () -> "the node never held the cap's worth of connections (" + full + " descriptors)");
      // A new client behind them all (the node holds the cap's worth, the rest wait in the
      // kernel's backlog): answered within its budget once header-read timeouts free slots.
      assertEquals(200, newClientGet(base + "/-/health/live").statusCode());
    }
    int most = peak.stop();
    assertTrue(most <= before + cap + MARGIN,
        "the node's descriptors stayed within the cap: at most " + most + ", " + before + " before the flood, cap "
            + cap);
    String metrics = new String(Http.getBytes(base + "/-/metrics").body());
    assertTrue(metrics.contains("corral_http_head_timeouts_total{phase=\"first-request\"}"),
        "the held connections were ended by the header-read timeout\n" + metrics);
    long log = node.logBytes();
    assertTrue(log < LOG_LIMIT, "the node's log stayed under 1 MB: " + log + " bytes\n" + node.output());
  }

  @Test
  void aNodeOutOfDescriptorsLogsAcceptErrorsAtMostOnceASecond() throws Exception {
    // The node's limit made low on purpose (soft and hard: the JVM raises a soft limit by itself),
    // with the default cap far above it: accept() fails with "Too many open files" and Pekko's
    // listener retries it without pause for as long as connections wait in the backlog.
    int limit = 1_024;
    int flood = 2_000;
    assertTrue(Descriptors.limit(ProcessHandle.current().pid()) >= flood + 1_000, "this JVM needs "
        + (flood + 1_000) + " descriptors (ulimit -Hn)");
    List<String> command = new ArrayList<>(List.of("sh", "-c", "ulimit -n " + limit + " && exec \"$@\"", "sh",
        CorralProcess.javaExecutable().toString(), "-jar", CorralProcess.serverJar().toString(),
        "serve", "--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0", "--peer-port", "0",
        "--data-dir", temp.resolve("data").toString(), "--header-read-timeout", "3s"));
    CorralProcess node = processes.track(CorralProcess.startCommand("low-limit", CorralProcess.moduleDir(),
        java.util.Map.of(), command));
    String base = node.awaitListening(Duration.ofSeconds(60));
    assertEquals(limit, Descriptors.limit(node.pid()), "the node runs with the low limit");
    assertTrue(node.stdout().contains("the open-file limit (" + limit + ") is below max-connections (4096)"),
        "the node warned at start\n" + node.output());

    try (HalfOpen half = HalfOpen.open(Loopback.port(base), flood)) {
      assertTrue(half.connected() > limit, "more connected than the node has descriptors: " + half.connected());
      Probe.until(Duration.ofSeconds(60), () -> node.logBytes() > LOG_LIMIT
              || node.stdout().contains("cannot accept connections: Too many open files"),
          () -> "no accept error reported\n" + node.output());
      // Once header-read timeouts free descriptors the node serves again.
      assertEquals(200, newClientGet(base + "/-/health/live").statusCode());
    }
    long log = node.logBytes();
    assertTrue(log < LOG_LIMIT, "the node's log stayed under 1 MB: " + log + " bytes");
    assertTrue(!node.stdout().contains("Accept error: could not accept new connection"),
        "Pekko's own trace is not written\n" + node.output());
    assertTrue(node.stdout().contains("accept errors since the last report"), "the count is\n" + node.output());
  }

  /**
   * A GET from a client of its own, on a new connection (the shared client could reuse a
   * connection opened before the flood), with a 60 s budget.
   */
  static HttpResponse<byte[]> newClientGet(String url) throws Exception {
    java.net.http.HttpClient client = java.net.http.HttpClient.newBuilder()
        .version(java.net.http.HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(60))
        .build();
    return client.send(Http.get(url), HttpResponse.BodyHandlers.ofByteArray());
  }

  /** The most descriptors a process held while it was watched (sampled every 20 ms on a thread of its own). */
  static final class DescriptorPeak {
    private final Thread thread;
    private volatile boolean stop;
    private volatile int most;

    private DescriptorPeak(long pid) {
      thread = new Thread(() -> {
        while (!stop) {
          most = Math.max(most, Descriptors.count(pid));
          try {
            Thread.sleep(20); // sampling pace
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "descriptor-peak");
      thread.setDaemon(true);
    }

    static DescriptorPeak start(long pid) {
      DescriptorPeak p = new DescriptorPeak(pid);
      p.most = Descriptors.count(pid);
      p.thread.start();
      return p;
    }

    int stop() throws InterruptedException {
      stop = true;
      thread.join(5_000);
      return most;
    }
  }

  /** Waits on a condition, polling; fails with the message when the time is up. */
  static final class Probe {
    private Probe() {}

    static void until(Duration limit, java.util.function.BooleanSupplier done, java.util.function.Supplier<String> message)
        throws InterruptedException {
      long end = System.nanoTime() + limit.toNanos();
      while (!done.getAsBoolean()) {
        if (System.nanoTime() - end > 0) {
          throw new AssertionError(message.get());
        }
        Thread.sleep(50);
      }
    }
  }

  /** The port of a base URL such as {@code http://127.0.0.1:40123}. */
  static final class Loopback {
    private Loopback() {}

    static int port(String base) {
      return java.net.URI.create(base).getPort();
    }
  }
}
