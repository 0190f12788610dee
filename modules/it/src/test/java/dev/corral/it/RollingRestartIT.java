package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.upstream.FakeUpstream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 3's "done when" for a rolling restart (SEMANTICS L3, L4, F1), on 3 real processes and
 * one PostgreSQL: a few client threads loop over a fixed set of keys, round-robin over the nodes
 * that are in rotation, while each node in turn is taken out of rotation, stopped with SIGTERM
 * (it drains and hands its shards off), started again on the same ports and data dir, and put
 * back once ready. No request fails and the upstream sees each key exactly once.
 *
 * <p>The test plays the load balancer: a node leaves the rotation before its SIGTERM (as a
 * readiness-gated balancer with connection draining does) and rejoins it only when its
 * {@code /-/health/ready} says 200. The clients retry nothing: each thread keeps one kept-alive
 * HTTP/1.1 connection per node ({@link RawHttp#keepAlive}), because the JDK client silently
 * sends a GET again when its connection closes before the response. A connection to a node's
 * earlier incarnation is never reused.
 */
class RollingRestartIT {
  private static final int KEYS = 25; // not a multiple of 2 or 3: every key meets every node
  private static final int THREADS = 3;
  private static final int REQUESTS_ON_A_RETURNED_NODE = 15;
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);
  private static final Duration LOAD_LIMIT = Duration.ofMinutes(8);

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private FakeUpstream upstream;
  private final AtomicBoolean stopLoad = new AtomicBoolean();
  private final List<Thread> load = new ArrayList<>();

  @AfterEach
  void stop() throws InterruptedException {
    stopLoad.set(true);
    for (Thread t : load) {
      t.join(REQUEST_TIMEOUT.toMillis() + 5_000);
    }
    if (upstream != null) {
      upstream.close();
    }
  }

  /** Most keys are small (inline replies); every fifth is 3 MiB (above Artery's 1 MiB inline: the blob endpoint). */
  private static byte[] body(int key) {
    return CrashRestartIT.bytes(500 + key, key % 5 == 0 ? 3 * 1024 * 1024 : 24 * 1024 + key);
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    if (path.startsWith("/k-") && path.endsWith(".bin")) {
      FakeUpstream.send(exchange, 200, body(Integer.parseInt(path.substring(3, path.length() - 4))));
    } else {
      FakeUpstream.send(exchange, 404, new byte[0]);
    }
  }

  @Test
  void restartingEachNodeInTurnUnderLoadFailsNoRequestAndFetchesEachKeyOnce() throws Exception {
    upstream = new FakeUpstream(this::answer);
    CorralCluster cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of(), true,
        List.of("--drain-timeout", "20s"), "up=generic:" + upstream.url("/"));
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(90));
    }
    cluster.awaitReady(Duration.ofSeconds(60));

    Rotation rotation = new Rotation(3);
    for (int i = 0; i < 3; i++) {
      rotation.add(i, cluster.base(i));
    }
    List<String> failures = new CopyOnWriteArrayList<>();
    Map<String, LongAdder> xCache = new ConcurrentHashMap<>();
    AtomicIntegerArray answeredBy = new AtomicIntegerArray(3);
    // (key, node) pairs that have been a HIT: the node holds a verified copy of the key.
    boolean[][] hit = new boolean[KEYS][3];
    AtomicLong counter = new AtomicLong();
    long loadDeadline = System.nanoTime() + LOAD_LIMIT.toNanos();
    for (int t = 0; t < THREADS; t++) {
      Thread thread = new Thread(() -> {
        Rotation.Connections connections = rotation.new Connections(REQUEST_TIMEOUT);
        while (!stopLoad.get() && System.nanoTime() < loadDeadline) {
          int node = rotation.acquire();
          if (node < 0) {
            failures.add("no node in rotation");
            return;
          }
          int key = (int) (counter.getAndIncrement() % KEYS);
          String path = "/up/k-" + key + ".bin";
          String url = rotation.base(node) + path;
          try {
            RawHttp.Response r = connections.to(node).get(path);
            String via = r.xCache();
            if (r.status() != 200 || !Arrays.equals(body(key), r.body())) {
              failures.add(url + " on node-" + (node + 1) + ": " + r.status() + " " + via + " " + r.body().length + " bytes");
            } else {
              xCache.computeIfAbsent(via, v -> new LongAdder()).increment();
              answeredBy.incrementAndGet(node);
              if (via.equals("HIT")) {
                synchronized (hit) {
                  hit[key][node] = true;
                }
              }
            }
          } catch (Exception e) {
            failures.add(url + " on node-" + (node + 1) + ": " + e);
            connections.drop(node);
          } finally {
            rotation.release(node);
          }
        }
        connections.close();
      }, "load-" + t);
      thread.setDaemon(true);
      load.add(thread);
      thread.start();
    }

    // Before the first stop every node holds every key, so the node being stopped is never a key's only holder.
    long warmAt = System.nanoTime();
    Await.until(Duration.ofSeconds(120), () -> "every key a HIT on every node; failures " + failures, () -> {
      synchronized (hit) {
        return Arrays.stream(hit).allMatch(row -> row[0] && row[1] && row[2]);
      }
    });
    System.out.printf("RollingRestartIT: every key on every node after %.1f s, %d requests%n",
        (System.nanoTime() - warmAt) / 1e9, counter.get());

    List<CorralProcess> incarnations = new ArrayList<>(cluster.nodes);
    for (int i = 0; i < 3; i++) {
      long stopAt = System.nanoTime();
      rotation.remove(i, REQUEST_TIMEOUT.plusSeconds(5));
      CorralProcess old = cluster.nodes.get(i);
      old.terminate();
      old.awaitExit(Duration.ofSeconds(60)); // 143: the JVM's exit code after SIGTERM and its shutdown hooks
      long stoppedAt = System.nanoTime();
      incarnations.add(cluster.restart(i, Duration.ofSeconds(90)));
      int node = i;
      Await.until(Duration.ofSeconds(90), () -> cluster.nodes.get(node).output(),
          () -> Http.getBytes(cluster.base(node) + "/-/health/ready").statusCode() == 200);
      for (int j = 0; j < 3; j++) {
        cluster.awaitMembersUp(j, 3, Duration.ofSeconds(60));
      }
      long readyAt = System.nanoTime();
      int before = answeredBy.get(i);
      rotation.add(i, cluster.base(i));
      Await.until(Duration.ofSeconds(60), () -> "node-" + (node + 1) + " answers requests again; failures " + failures,
          () -> answeredBy.get(node) >= before + REQUESTS_ON_A_RETURNED_NODE);
      System.out.printf("RollingRestartIT: node-%d drained and exited in %.1f s, was ready again %.1f s later; failures so far %d%n",
          i + 1, (stoppedAt - stopAt) / 1e9, (readyAt - stoppedAt) / 1e9, failures.size());
    }
    stopLoad.set(true);
    for (Thread t : load) {
      t.join(REQUEST_TIMEOUT.toMillis() + 5_000);
      assertTrue(!t.isAlive(), t.getName() + " ended");
    }

    Map<String, Long> tally = new TreeMap<>();
    xCache.forEach((k, v) -> tally.put(k, v.sum()));
    System.out.printf("RollingRestartIT: %d requests, X-Cache %s, answered per node [%d, %d, %d], %d failed%n",
        counter.get(), tally, answeredBy.get(0), answeredBy.get(1), answeredBy.get(2), failures.size());
    assertEquals(List.of(), failures, "no request fails while the nodes restart one at a time");
    for (int key = 0; key < KEYS; key++) {
      assertEquals(1, upstream.requests("/k-" + key + ".bin"), "key " + key + " fetched from the upstream once");
    }
    assertEquals(KEYS, upstream.requests());
    // Replies between nodes all arrived: none was dropped as undecodable (the shaded jar once did that to Inline).
    for (CorralProcess p : incarnations) {
      assertTrue(!p.stdout().contains("Failed to deserialize"), p.output());
    }
  }
}
