package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.cluster.sharding.typed.HashCodeMessageExtractor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS L4 in a cluster of 3 real processes (issue 13 item 12): one node is stopped with
 * SIGTERM while 200 requests for 20 uncached keys are in flight on the other two. Every request
 * gets its exact bytes and the upstream sees one request per key.
 *
 * <p>Half of the keys (phase 1) are being fetched when the stop begins, half of those by the
 * stopping node: it finishes them for the waiters on the other nodes, which copy the bytes from
 * its peer endpoint while it drains. The other half (phase 2) are first asked while it drains,
 * half of them of shards it still hosts: it must not start their fetches (they would hold up its
 * drain, then be aborted by the hand-off and fetched again by the keys' next entities); their
 * waiters ask again and are answered by the keys' entities on the nodes that stay. The upstream
 * holds phase 2 until the stopping node has exited, so a fetch started there can only end aborted.
 *
 * <p>Which node hosts a key's shard is read from each node's management endpoint
 * ({@code /cluster/shards/Fetch}) after warm-up keys have spread shards over the three nodes;
 * the keys are then picked by their shard (Pekko's {@link HashCodeMessageExtractor}).
 */
@Tag("cross-node")
class DrainIT {
  private static final int PHASE_ONE_SIZE = 1536 * 1024; // over the 1 MiB inline reply: read from the peer endpoint
  private static final int PHASE_TWO_SIZE = 32 * 1024;
  private static final Pattern SHARD = Pattern.compile("\"shardId\"\\s*:\\s*\"([^\"]+)\"");

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();

  private final CountDownLatch releasePhaseOne = new CountDownLatch(1);
  private final CountDownLatch releasePhaseTwo = new CountDownLatch(1);
  private final Set<String> phaseOne = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private FakeUpstream upstream;
  private Path temp;

  @AfterEach
  void stop() throws Exception {
    releasePhaseOne.countDown();
    releasePhaseTwo.countDown();
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
    if (path.startsWith("/w-")) {
      FakeUpstream.send(exchange, 200, body(path, 100));
    } else if (path.startsWith("/k-")) {
      boolean first = phaseOne.contains(path);
      if (!(first ? releasePhaseOne : releasePhaseTwo).await(120, TimeUnit.SECONDS)) {
        throw new IOException("never released");
      }
      FakeUpstream.send(exchange, 200, body(path, first ? PHASE_ONE_SIZE : PHASE_TWO_SIZE));
    } else {
      FakeUpstream.send(exchange, 404, new byte[0]);
    }
  }

  private static byte[] body(String path, int size) {
    return CrashRestartIT.bytes(path.hashCode(), size);
  }

  @Test
  void stoppingOneNodeOfThreeUnderLoadLosesNoRequestAndFetchesEachKeyOnce() throws Exception {
    temp = Files.createTempDirectory("drain-it");
    upstream = new FakeUpstream(this::answer);
    CorralCluster cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(),
        List.of("--drain-timeout", "15s"), "up=generic:" + upstream.url("/"));
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
    int stopping = 2;

    // Warm-up: 30 keys spread shards over the three nodes.
    for (int i = 0; i < 30; i++) {
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(i % 3) + "/up/w-" + i + ".bin");
      assertEquals(200, r.statusCode());
    }
    Set<String> onStopping = shards(cluster, stopping);
    Set<String> onStaying = new HashSet<>(shards(cluster, 0));
    onStaying.addAll(shards(cluster, 1));
    assertTrue(!onStopping.isEmpty() && !onStaying.isEmpty(), "shards on every node: " + onStopping + " " + onStaying);

    // 20 keys: per phase, 5 of shards on the stopping node and 5 of shards on the others.
    HashCodeMessageExtractor<Object> shards = new HashCodeMessageExtractor<>(1000);
    List<String> there = new ArrayList<>();
    List<String> elsewhere = new ArrayList<>();
    for (int i = 0; i < 1_000_000 && (there.size() < 10 || elsewhere.size() < 10); i++) {
      String path = "/k-" + i + ".bin";
      String shard = shards.shardId(ArtifactKey.of("up", upstream.url(path)).id());
      if (onStopping.contains(shard) && there.size() < 10) {
        there.add(path);
      } else if (onStaying.contains(shard) && elsewhere.size() < 10) {
        elsewhere.add(path);
      }
    }
    List<String> first = new ArrayList<>(there.subList(0, 5));
    first.addAll(elsewhere.subList(0, 5));
    List<String> second = new ArrayList<>(there.subList(5, 10));
    second.addAll(elsewhere.subList(5, 10));
    phaseOne.addAll(first);

    // Phase 1: 100 requests on the two staying nodes, every fetch held at the upstream.
    List<Sent> sent = new ArrayList<>();
    send(cluster, first, sent);
    Await.until(Duration.ofSeconds(60), () -> "phase 1 fetches: " + upstream.requests(),
        () -> first.stream().allMatch(p -> upstream.requests(p) == 1));

    // The stop begins; once the node refuses connections it drains.
    CorralProcess node = cluster.nodes.get(stopping);
    int port = URI.create(cluster.base(stopping)).getPort();
    node.terminate();
    Await.until(Duration.ofSeconds(30), () -> "the stopping node still accepts connections\n" + node.output(),
        () -> refuses(port));

    // Phase 2: 100 more requests for keys nobody asked yet, while it drains.
    send(cluster, second, sent);
    releasePhaseOne.countDown();
    node.awaitExit(Duration.ofSeconds(90));
    releasePhaseTwo.countDown();

    for (Sent s : sent) {
      HttpResponse<byte[]> r = s.response().get(90, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), s.path() + " on node " + (s.node() + 1));
      assertArrayEquals(body(s.path(), phaseOne.contains(s.path()) ? PHASE_ONE_SIZE : PHASE_TWO_SIZE), r.body(),
          s.path() + " on node " + (s.node() + 1) + " got the exact bytes");
    }
    int total = 0;
    for (String p : first) {
      assertEquals(1, upstream.requests(p), p + " (phase 1)");
      total += upstream.requests(p);
    }
    for (String p : second) {
      assertEquals(1, upstream.requests(p), p + " (phase 2, " + (there.contains(p) ? "of the stopping node" : "elsewhere")
          + "): a fetch started by the draining node is aborted by its hand-off and fetched again\n" + node.output());
      total += upstream.requests(p);
    }
    assertEquals(20, total);
  }

  private record Sent(String path, int node, CompletableFuture<HttpResponse<byte[]>> response) {}

  /** 10 requests per key, alternating between the staying nodes 0 and 1. */
  private static void send(CorralCluster cluster, List<String> paths, List<Sent> sent) {
    for (String p : paths) {
      for (int i = 0; i < 10; i++) {
        int n = i % 2;
        sent.add(new Sent(p, n, Http.CLIENT.sendAsync(Http.get(cluster.base(n) + "/up" + p),
            HttpResponse.BodyHandlers.ofByteArray())));
      }
    }
  }

  /** The shards node {@code i} hosts now ({@code GET /cluster/shards/Fetch} on its management port). */
  static Set<String> shards(CorralCluster cluster, int i) throws Exception {
    HttpResponse<byte[]> r = Http.getBytes(cluster.management(i) + "/cluster/shards/Fetch");
    assertEquals(200, r.statusCode(), new String(r.body(), StandardCharsets.UTF_8));
    Set<String> ids = new HashSet<>();
    Matcher m = SHARD.matcher(new String(r.body(), StandardCharsets.UTF_8));
    while (m.find()) {
      ids.add(m.group(1));
    }
    return ids;
  }

  /** True when a new TCP connection to the port is refused. */
  private static boolean refuses(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 1_000);
      return false;
    } catch (ConnectException refused) {
      return true;
    } catch (IOException other) {
      return false;
    }
  }
}
