package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.Await;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.upstream.FakeUpstream;
import dev.corral.testkit.upstream.RawUpstream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.cluster.sharding.typed.HashCodeMessageExtractor;
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
 *
 * <p>The same cluster also proves SEMANTICS C3 on 3 processes, in a repository of its own
 * ({@code orphans}, {@code max-orphan-fetches = 2}): see
 * {@link #c3_twentyAbandonedLargeDownloadsOnThreeNodesWithALimitOfTwoLeaveTwoRunningOnEachNode}.
 */
@Tag("cross-node")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class BudgetsIT {
  private static final Duration BUDGET = Duration.ofSeconds(3);
  private static final int SIZE = 4 * 1024 * 1024;
  private static final int CHUNKS = 16;
  private static final int CLIENTS = 12;

  /** C3: the orphans repository's max-orphan-fetches, per node. */
  private static final int ORPHAN_SLOTS = 2;
  private static final int ORPHANS = 20;
  /** Streams: over the orphans repository's 256 KiB inline limit and the 1 MiB cross-node one. */
  private static final int ORPHAN_SIZE = 2 * 1024 * 1024;
  private static final int ORPHAN_FIRST = 64 * 1024;
  private static final int ORPHAN_PULSE = 512;
  private static final Pattern ORPHAN_INFLIGHT =
      Pattern.compile("(?m)^corral_inflight_fetches\\{repo=\"orphans\"\\} ([0-9.]+)");

  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private final byte[] known = CrashRestartIT.bytes(61, SIZE);
  private final byte[] chunked = CrashRestartIT.bytes(62, SIZE);
  private volatile boolean warmed;
  private FakeUpstream upstream;
  /** The orphans repository's upstream: raw sockets, so that it sees a connection closed while it holds the body. */
  private RawUpstream orphanUpstream;
  private final Map<String, Held> held = new ConcurrentHashMap<>();
  private CorralCluster cluster;
  private Path temp;

  @BeforeAll
  void startCluster() throws Exception {
    temp = Files.createTempDirectory("budgets-it");
    upstream = new FakeUpstream(this::answer);
    orphanUpstream = new RawUpstream(this::answerOrphan);
    // The last --config wins: this one repeats the cluster's quick join.
    Path conf = temp.resolve("budgets.conf");
    Files.writeString(conf, "pekko.cluster.seed-node-timeout = 1s\n"
        + "corral.repo-defaults { waiter-budget = " + BUDGET.toMillis() + "ms, negative-ttl = 1ms }\n"
        + "corral.repos.orphans { max-orphan-fetches = " + ORPHAN_SLOTS + ", inline-limit = \"256KiB\" }\n");
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of("--config", conf.toString()),
        "up=generic:" + upstream.url("/"), "orphans=generic:" + orphanUpstream.url("/"));
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
    if (orphanUpstream != null) {
      orphanUpstream.close();
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
    // allocation across the cluster took longer than a 1 s budget on this busy machine, and once
    // in CI, 2026-12-07, longer than this 3 s one: a 504, so the node is asked again).
    for (int i = 0; i < 3; i++) {
      String url = cluster.base(i) + "/up" + path;
      int status = Http.getBytes(url).statusCode();
      if (status == 504) {
        Await.until(Duration.ofSeconds(30), () -> url + " never answered 404", () -> Http.getBytes(url).statusCode() == 404);
      } else {
        assertEquals(404, status, "node " + (i + 1) + " before the key exists");
      }
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

  // ---- C3 on three processes ----------------------------------------------------------------

  /**
   * SEMANTICS C3 on 3 processes: 20 large downloads, each streamed by one client (7, 7 and 6 on
   * the three nodes) that reads its first bytes and hangs up, with the upstream holding every body
   * open. Each is then an orphan on the client's node: for the 10 odd keys, whose fetch runs on the
   * client's node (the node hosting the key's shard), the fetch's own download; for the 10 even
   * ones, whose fetch runs on another node, the client's node's copy from there, whose abort leaves
   * that node's download unread, an orphan there in turn. {@code max-orphan-fetches} holds per node,
   * copies included, and every node has more than 2 orphans: each node keeps exactly 2, whichever
   * they are, and the cluster 6. The upstream sees 14 connections closed and 6 left open, and the
   * nodes' {@code corral_inflight_fetches} add up to 6. The 6 then get their bodies, are committed
   * and asked again without the upstream; the 14 are fetched again.
   *
   * <p>A node notices a client gone only when it next writes to it, so the test has the upstream
   * give every open download one more small piece (never its end) at each probe until that state
   * is reached; the bodies end only when the test releases them.
   */
  @Test
  void c3_twentyAbandonedLargeDownloadsOnThreeNodesWithALimitOfTwoLeaveTwoRunningOnEachNode() throws Exception {
    // Where each key's fetch runs: on the node hosting its shard (read from each node's management
    // endpoint once warm-up keys, answered 404, have spread shards over the three nodes). The
    // client of key i is on node i % 3; an even key's fetch runs on the next node, so the client's
    // node copies it from there, an odd key's on the client's node.
    List<CompletableFuture<HttpResponse<byte[]>>> warmUp = new ArrayList<>();
    for (int j = 0; j < 30; j++) {
      warmUp.add(Http.CLIENT.sendAsync(Http.get(cluster.base(j % 3) + "/orphans/w-" + j + ".bin"),
          HttpResponse.BodyHandlers.ofByteArray()));
    }
    for (int j = 0; j < 30; j++) {
      if (warmUp.get(j).get(60, TimeUnit.SECONDS).statusCode() != 404) {
        // A 504: the shard's first allocation outlasted the 3 s budget (see trickled); ask again.
        String url = cluster.base(j % 3) + "/orphans/w-" + j + ".bin";
        Await.until(Duration.ofSeconds(30), () -> url + " never answered 404", () -> Http.getBytes(url).statusCode() == 404);
      }
    }
    List<Set<String>> hosted = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      hosted.add(DrainIT.shards(cluster, i));
      assertTrue(!hosted.get(i).isEmpty(), "node " + (i + 1) + " hosts shards");
    }
    HashCodeMessageExtractor<Object> shards = new HashCodeMessageExtractor<>(1000);
    List<String> paths = new ArrayList<>();
    double[] fetchesPerNode = new double[3];
    for (int i = 0, n = 0; i < ORPHANS; i++) {
      int fetching = i % 2 == 0 ? (i + 1) % 3 : i % 3;
      String p;
      do {
        p = "/o-" + n++ + ".bin";
      } while (!hosted.get(fetching).contains(shards.shardId(ArtifactKey.of("orphans", orphanUpstream.url(p)).id())));
      paths.add(p);
      fetchesPerNode[fetching]++;
    }
    List<RawHttp> clients = new ArrayList<>();
    for (int i = 0; i < ORPHANS; i++) {
      clients.add(RawHttp.send(address(i % 3), "GET", "/orphans" + paths.get(i)));
    }
    // Every client gets its status, headers and first bytes: its download streams.
    for (int i = 0; i < ORPHANS; i++) {
      InputStream in = clients.get(i).input();
      String head = RawHttp.readHead(in);
      assertTrue(head.startsWith("HTTP/1.1 200"), paths.get(i) + " on node " + (i % 3 + 1) + ": " + head);
      assertTrue(head.toLowerCase().contains("content-length: " + ORPHAN_SIZE), head);
      assertTrue(in.read() >= 0, paths.get(i) + ": the body began");
    }
    for (String p : paths) {
      assertEquals(1, orphanUpstream.requests(p), p + ": one upstream request");
      assertTrue(held.containsKey(p), p);
    }
    assertArrayEquals(fetchesPerNode, inflightPerNode(), "each key's fetch runs on the node hosting its shard");

    // Every client hangs up.
    clients.forEach(RawHttp::close);
    int kept = 3 * ORPHAN_SLOTS;
    Await.until(Duration.ofSeconds(20),
        () -> "expected " + (ORPHANS - kept) + " aborted upstream downloads and " + kept + " running; aborted "
            + aborted() + ", corral_inflight_fetches{repo=\"orphans\"} " + inflightByNode(),
        () -> {
          held.forEach((p, h) -> h.pulse());
          return aborted() == ORPHANS - kept && inflight() == kept;
        });

    // The 6 that kept a slot get the rest of their bodies; the others were aborted.
    List<String> running = paths.stream().filter(p -> !held.get(p).isClosed()).toList();
    assertEquals(kept, running.size(), "still running: " + running);
    for (String p : running) {
      assertTrue(held.get(p).finish(), p + ": its body was written to the end");
    }
    Await.until(Duration.ofSeconds(20), () -> "the kept downloads end: " + inflightByNode(),
        () -> held.values().stream().allMatch(Held::isClosed) && inflight() == 0);

    // Asked again on the node that asked first: the kept ones were committed (no upstream
    // request), the aborted ones are fetched again; every answer is the exact body.
    List<CompletableFuture<HttpResponse<byte[]>>> again = new ArrayList<>();
    for (int i = 0; i < ORPHANS; i++) {
      again.add(Http.CLIENT.sendAsync(Http.get(cluster.base(i % 3) + "/orphans" + paths.get(i)),
          HttpResponse.BodyHandlers.ofByteArray()));
    }
    for (int i = 0; i < ORPHANS; i++) {
      HttpResponse<byte[]> r = again.get(i).get(60, TimeUnit.SECONDS);
      String p = paths.get(i);
      assertEquals(200, r.statusCode(), p);
      assertArrayEquals(orphanBody(p), r.body(), p + " on node " + (i % 3 + 1));
      assertEquals(running.contains(p) ? 1 : 2, orphanUpstream.requests(p),
          p + (running.contains(p) ? ": kept running, committed" : ": aborted, fetched again") + " (X-Cache "
              + Http.xCache(r) + ")");
    }
  }

  private InetSocketAddress address(int node) {
    return new InetSocketAddress("127.0.0.1", URI.create(cluster.base(node)).getPort());
  }

  /** Upstream downloads of the orphans repository whose connection the node closed before their end. */
  private long aborted() {
    return held.values().stream().filter(h -> h.isClosed() && !h.whole()).count();
  }

  private double inflight() throws Exception {
    double sum = 0;
    for (double d : inflightPerNode()) {
      sum += d;
    }
    return sum;
  }

  private String inflightByNode() {
    try {
      return java.util.Arrays.toString(inflightPerNode());
    } catch (Exception e) {
      return "(" + e + ")";
    }
  }

  /** Each node's {@code corral_inflight_fetches{repo="orphans"}}: its entities' fetches still running. */
  private double[] inflightPerNode() throws Exception {
    double[] perNode = new double[3];
    for (int i = 0; i < 3; i++) {
      String metrics = new String(Http.getBytes(cluster.base(i) + "/-/metrics").body(), StandardCharsets.UTF_8);
      Matcher m = ORPHAN_INFLIGHT.matcher(metrics);
      perNode[i] = m.find() ? Double.parseDouble(m.group(1)) : 0;
    }
    return perNode;
  }

  private static byte[] orphanBody(String path) {
    return CrashRestartIT.bytes(path.hashCode(), ORPHAN_SIZE);
  }

  /**
   * The orphans repository's upstream. A key's first request gets its status, headers and first
   * 64 KiB, then the test gives more ({@link Held}); the connection is watched for the node closing
   * it (it sends nothing more on it while the response runs). A key asked again gets its whole body.
   */
  private void answerOrphan(String target, Socket socket, OutputStream out) throws Exception {
    if (!target.startsWith("/o-")) {
      out.write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
          .getBytes(StandardCharsets.US_ASCII));
      out.flush();
      return;
    }
    byte[] body = orphanBody(target);
    byte[] head = ("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: " + body.length
        + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
    if (orphanUpstream.requests(target) > 1) {
      out.write(head);
      out.write(body);
      out.flush();
      return;
    }
    Held h = new Held(body, out);
    synchronized (h) {
      out.write(head);
      out.write(body, 0, ORPHAN_FIRST);
      out.flush();
      h.sent = ORPHAN_FIRST;
    }
    held.put(target, h);
    try {
      InputStream in = socket.getInputStream();
      while (in.read() >= 0) {
        // nothing more comes on this connection but its end
      }
    } catch (IOException reset) {
      // closed by a reset
    }
    h.closed.countDown();
  }

  /** One upstream download of the orphans repository, its body held open by the upstream. */
  private static final class Held {
    final byte[] body;
    final OutputStream out;
    final CountDownLatch closed = new CountDownLatch(1);
    int sent; // guarded by this
    boolean whole; // guarded by this

    Held(byte[] body, OutputStream out) {
      this.body = body;
      this.out = out;
    }

    boolean isClosed() {
      return closed.getCount() == 0;
    }

    synchronized boolean whole() {
      return whole;
    }

    /** A little more of the body, never its last KiB: the download does not end by itself. */
    synchronized void pulse() {
      int n = Math.min(ORPHAN_PULSE, body.length - 1024 - sent);
      if (isClosed() || n <= 0) {
        return;
      }
      try {
        out.write(body, sent, n);
        out.flush();
        sent += n;
      } catch (IOException gone) {
        // the node closed the connection: its reader above sees it
      }
    }

    /** The rest of the body; false when the connection was gone. */
    synchronized boolean finish() {
      try {
        out.write(body, sent, body.length - sent);
        out.flush();
        sent = body.length;
        whole = true;
      } catch (IOException gone) {
        // not written to the end
      }
      return whole;
    }
  }
}
