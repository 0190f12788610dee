package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.OutputStream;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS W3 on 3 real processes: a waiter's budget stops when the status and headers are
 * known. A 4 MiB body (under the inline limit, so answered only once complete) trickles from the
 * upstream over twice the waiter budget; the waiters on every node get the whole body, none a
 * 504, and the upstream sees one request. Before W3 was kept for such bodies, every waiter got a
 * 504 at its budget. Both with a Content-Length and chunked (the length unknown until the end).
 *
 * <p>The budget runs in the nodes' real time, so the upstream paces the body in real time: it is
 * the slow link this rule is about (not a wait for something to happen), and it lasts at least
 * twice the budget, measured by the upstream from the moment it has every client's request.
 */
@Tag("cross-node")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BudgetsIT {
  private static final Duration BUDGET = Duration.ofSeconds(3);
  private static final int SIZE = 4 * 1024 * 1024;
  private static final int CHUNKS = 16;
  private static final int CLIENTS = 12;

  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private final byte[] known = CrashRestartIT.bytes(61, SIZE);
  private final byte[] chunked = CrashRestartIT.bytes(62, SIZE);
  private volatile boolean warmed;
  private FakeUpstream upstream;
  private CorralCluster cluster;
  private Path temp;

  @BeforeAll
  void startCluster() throws Exception {
    temp = Files.createTempDirectory("budgets-it");
    upstream = new FakeUpstream(this::answer);
    // The last --config wins: this one repeats the cluster's quick join.
    Path conf = temp.resolve("budgets.conf");
    Files.writeString(conf, "pekko.cluster.seed-node-timeout = 3s\n"
        + "corral.repo-defaults { waiter-budget = " + BUDGET.toMillis() + "ms, negative-ttl = 1ms }\n");
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of("--config", conf.toString()),
        "up=generic:" + upstream.url("/"));
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() throws Exception {
    processes.stopAll();
    if (upstream != null) {
      upstream.close();
    }
    if (temp != null) {
      GeneratedBody.deleteTree(temp);
    }
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    byte[] body = path.equals("/known.bin") ? known : path.equals("/chunked.bin") ? chunked : null;
    if (body == null || !warmed) { // until the test says so, a key only starts its entity (see trickled)
      FakeUpstream.send(exchange, 404, new byte[0]);
      return;
    }
    // Status and headers now; then the body, one chunk after another, over twice the budget.
    exchange.sendResponseHeaders(200, path.equals("/known.bin") ? body.length : 0);
    long start = System.nanoTime();
    long span = BUDGET.multipliedBy(2).plusMillis(400).toNanos();
    int chunk = body.length / CHUNKS;
    OutputStream out = exchange.getResponseBody();
    for (int i = 0; i < CHUNKS; i++) {
      out.write(body, i * chunk, chunk);
      out.flush();
      long due = start + span * (i + 1) / CHUNKS;
      for (long left = due - System.nanoTime(); left > 0; left = due - System.nanoTime()) {
        LockSupport.parkNanos(left); // the slow link's pace
      }
    }
    out.close();
  }

  @Test
  void aBodyOfKnownLengthTrickledOverTwiceTheBudgetReachesEveryWaiterOnEveryNode() throws Exception {
    trickled("/known.bin", known);
  }

  @Test
  void aChunkedBodyTrickledOverTwiceTheBudgetReachesEveryWaiterOnEveryNode() throws Exception {
    trickled("/chunked.bin", chunked);
  }

  private void trickled(String path, byte[] body) throws Exception {
    warmed = false;
    // The key's entity is started first, and every node has found it: a 404, remembered for
    // 1 ms. The budgets below then measure the fetch, not the cold start of a shard (its
    // allocation across the cluster took longer than a 1 s budget on this busy machine).
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> warm = Http.CLIENT.send(Http.get(cluster.base(i) + "/up" + path),
          HttpResponse.BodyHandlers.ofByteArray());
      assertEquals(404, warm.statusCode(), "node " + (i + 1) + " before the key exists");
    }
    warmed = true;
    int before = upstream.requests(path);
    long sent = System.nanoTime();
    List<CompletableFuture<HttpResponse<byte[]>>> responses = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      responses.add(Http.CLIENT.sendAsync(Http.get(cluster.base(i % 3) + "/up" + path),
          HttpResponse.BodyHandlers.ofByteArray()));
    }
    for (int i = 0; i < responses.size(); i++) {
      HttpResponse<byte[]> r = responses.get(i).get(90, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), "client " + i + " on node " + (i % 3 + 1));
      assertArrayEquals(body, r.body(), "client " + i + " on node " + (i % 3 + 1) + " got the exact bytes");
    }
    // The answers came after every budget had run out twice: the rule was exercised, not dodged.
    assertTrue(System.nanoTime() - sent >= BUDGET.multipliedBy(2).toNanos(), "the body took twice the budget");
    assertEquals(before + 1, upstream.requests(path), "one upstream request for " + CLIENTS + " clients on 3 nodes");
  }
}
