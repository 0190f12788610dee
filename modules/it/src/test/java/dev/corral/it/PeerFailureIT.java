package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.Await;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 13 item 4 on 3 real processes: one holder's blob corrupted on disk (same size) is that
 * holder's failure, never the key's. Node 1 holds a copy of each of several keys and is made the
 * only holder (another node's copy is lost, as with a lost disk), then its copies are corrupted.
 * Requests on the other nodes reach node 1's bad copy, either as the key's entity (its store) or
 * through the key's record (a miss on the entity's node copies from the recorded holders); every
 * one is answered 200 with the right bytes, never 502 and never with the corrupt body complete,
 * and each key is fetched from the upstream once more, not once per request.
 *
 * <p>The bodies are 2 MiB: over the size carried inside a reply between nodes (so they are
 * copied from the holder's peer endpoint) and under the repository's inline limit (so a waiter is
 * answered once the bytes are verified).
 *
 * <p>The same cluster also proves B1 has no opt-out on 3 processes (issue 13 item 8): the Maven
 * repository {@code bp} ({@code on-budget-exhausted = bypass}, a short waiter budget) publishes a
 * {@code .sha512} beside each jar and holds the jar's first request (the key's fetch, before its
 * headers), so the waiters on every node run out of budget and fetch directly, uncached. A direct
 * fetch verifies against the checksum as the key's fetch does: a body that does not match is cut
 * before its last byte on every node and nothing is stored; one that matches is served whole
 * ({@code X-Cache: BYPASS}).
 *
 * <p>And what a node serves its own clients from its store is verified (issue 13 item 5, F2): a
 * large hit whose blob was corrupted on disk (same size) streams hashed and is cut before its last
 * byte, a small one is read whole and verified before it is answered; either way the node drops
 * the bad copy and its next answer has the right bytes. The memory cache is off on every node, so
 * that every hit reads the disk (a small body kept on the heap was verified when it was kept).
 */
@Tag("cross-node")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PeerFailureIT {
  private static final int SIZE = 2 * 1024 * 1024;
  /** Keys enough that the entities of some are on node 1 and of some on the other nodes. */
  private static final int KEYS = 9;
  /** The {@code bp} repository's waiter budget: what a client waits before it bypasses the cache. */
  private static final Duration BUDGET = Duration.ofMillis(2500);
  private static final int JAR_SIZE = 512 * 1024;
  /** Keys of the served-from-the-store tests: the large one streams from disk, the small one is read whole. */
  private static final String LARGE_HIT = "/hit-large.bin";
  private static final String SMALL_HIT = "/hit-small.bin";
  private static final byte[] LARGE_HIT_BODY = CrashRestartIT.bytes(7901, SIZE);
  private static final byte[] SMALL_HIT_BODY = CrashRestartIT.bytes(7902, 10_000);
  private static final Pattern INFLIGHT = Pattern.compile("(?m)^corral_inflight_fetches\\{repo=\"bp\"\\} ([0-9.eE+-]+)");

  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private FakeUpstream upstream;
  private CorralCluster cluster;
  private Path temp;
  /** The {@code bp} repository's jars, by path under its upstream base. */
  private final Map<String, Jar> jars = new ConcurrentHashMap<>();

  @BeforeAll
  void startCluster() throws Exception {
    temp = Files.createTempDirectory("peer-failure-it");
    upstream = new FakeUpstream(this::answer);
    // The last --config given wins: this one keeps CorralCluster's quick join.
    Path conf = temp.resolve("bypass.conf");
    Files.writeString(conf, """
        pekko.cluster.seed-node-timeout = 1s
        corral.memory-cache-size = 0
        corral.repos.bp { type = maven, url = "%s", first-byte-timeout = 20s, retries = 0, negative-ttl = 1ms,
                          waiter-budget = %dms, on-budget-exhausted = bypass }
        """.formatted(upstream.url("/m2/"), BUDGET.toMillis()));
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

  /** A test that failed while a jar's fetch was held lets it go, so that no later test waits for it. */
  @AfterEach
  void releaseHeldFetches() {
    for (Jar jar : jars.values()) {
      if (jar.heldAnswer == null) {
        jar.heldAnswer = jar.corrupt;
      }
      jar.release.countDown();
    }
  }

  private void answer(HttpExchange exchange, int nth) throws Exception {
    String path = exchange.getRequestURI().getPath();
    if (path.equals(LARGE_HIT) || path.equals(SMALL_HIT)) {
      FakeUpstream.send(exchange, 200, path.equals(LARGE_HIT) ? LARGE_HIT_BODY : SMALL_HIT_BODY);
    } else if (path.startsWith("/p-")) {
      FakeUpstream.send(exchange, 200, body(keyNumber(path)));
    } else if (path.startsWith("/m2/") && path.endsWith(".jar.sha512") && jars.containsKey(path.substring(3, path.length() - 7))) {
      byte[] good = jars.get(path.substring(3, path.length() - 7)).good;
      FakeUpstream.send(exchange, 200, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-512").digest(good))
          .getBytes(StandardCharsets.US_ASCII));
    } else if (path.startsWith("/m2/") && jars.containsKey(path.substring(3))) {
      jars.get(path.substring(3)).answer(exchange);
    } else {
      FakeUpstream.send(exchange, 404, new byte[0]);
    }
  }

  private static int keyNumber(String path) {
    return Integer.parseInt(path.substring("/p-".length(), path.length() - ".bin".length()));
  }

  private static byte[] body(int key) {
    return CrashRestartIT.bytes(7000 + key, SIZE);
  }

  private static String sha256(byte[] b) throws Exception {
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(b));
  }

  /** The files named {@code sha} under node {@code i}'s data dir (its committed blob, if any). */
  private List<Path> blobs(int i, String sha) {
    try (Stream<Path> files = Files.walk(temp.resolve("data-" + (i + 1)))) {
      return files.filter(p -> p.getFileName().toString().equals(sha) && Files.isRegularFile(p)).toList();
    } catch (IOException e) {
      return List.of(); // a file removed while walking: look again
    }
  }

  @Test
  void aHoldersBlobCorruptedOnDiskIsDroppedAndEveryOtherNodeServesTheRightBytes() throws Exception {
    for (int k = 0; k < KEYS; k++) {
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(0) + "/up/p-" + k + ".bin");
      assertEquals(200, r.statusCode());
      assertArrayEquals(body(k), r.body());
    }
    for (int k = 0; k < KEYS; k++) {
      String sha = sha256(body(k));
      int key = k;
      Await.until("node 1's copy of key " + k, Duration.ofSeconds(30), () -> blobs(0, sha).size() == 1);
      // Node 1 the only holder: the entity's node (when another one) loses its copy.
      for (int i = 1; i < 3; i++) {
        for (Path p : blobs(i, sha)) {
          Files.delete(p);
        }
      }
      byte[] bad = body(key).clone();
      bad[SIZE / 3] ^= 1;
      Files.write(blobs(0, sha).get(0), bad); // same size: only hashing finds it
    }

    // Two requests per key on each of the two other nodes, all at once.
    List<CompletableFuture<HttpResponse<byte[]>>> sent = new ArrayList<>();
    for (int k = 0; k < KEYS; k++) {
      for (int n = 0; n < 4; n++) {
        sent.add(Http.CLIENT.sendAsync(Http.get(cluster.base(1 + n % 2) + "/up/p-" + k + ".bin"),
            HttpResponse.BodyHandlers.ofByteArray()));
      }
    }
    for (int i = 0; i < sent.size(); i++) {
      int k = i / 4;
      HttpResponse<byte[]> r = sent.get(i).get(120, TimeUnit.SECONDS);
      assertEquals(200, r.statusCode(), "key " + k + " on node " + (2 + i % 2) + ": never a 502 for a holder's bad copy");
      assertArrayEquals(body(k), r.body(), "key " + k + " on node " + (2 + i % 2) + ": the right bytes");
    }
    for (int k = 0; k < KEYS; k++) {
      assertEquals(2, upstream.requests("/p-" + k + ".bin"),
          "key " + k + ": fetched again once after the bad holder, not once per request");
    }
    // The bad copies are gone, and every node (node 1 too) now serves the right bytes.
    for (int k = 0; k < KEYS; k++) {
      for (int i = 0; i < 3; i++) {
        HttpResponse<byte[]> r = Http.getBytes(cluster.base(i) + "/up/p-" + k + ".bin");
        assertEquals(200, r.statusCode(), "key " + k + " on node " + (i + 1));
        assertArrayEquals(body(k), r.body(), "key " + k + " on node " + (i + 1));
      }
      assertEquals(2, upstream.requests("/p-" + k + ".bin"), "key " + k);
      for (Path p : blobs(0, sha256(body(k)))) {
        assertFalse(java.util.Arrays.equals(Files.readAllBytes(p), corrupt(k)), "node 1 keeps no corrupt copy of key " + k);
      }
    }
  }

  private static byte[] corrupt(int k) {
    byte[] bad = body(k).clone();
    bad[SIZE / 3] ^= 1;
    return bad;
  }

  /**
   * Fetches {@code path} through node 1 and waits for node 1's blob, then overwrites it with the
   * same bytes but one (same size: only hashing finds it); returns the corrupted bytes.
   */
  private byte[] storedOnNode1ThenCorrupted(String path, byte[] good) throws Exception {
    HttpResponse<byte[]> first = Http.getBytes(cluster.base(0) + "/up" + path);
    assertEquals(200, first.statusCode());
    assertArrayEquals(good, first.body());
    String sha = sha256(good);
    Await.until("node 1's copy of " + path, Duration.ofSeconds(30), () -> blobs(0, sha).size() == 1);
    byte[] bad = good.clone();
    bad[good.length / 3] ^= 1;
    Files.write(blobs(0, sha).get(0), bad);
    return bad;
  }

  private InetSocketAddress address(int node) {
    return new InetSocketAddress("127.0.0.1", URI.create(cluster.base(node)).getPort());
  }

  @Test
  void aLargeHitCorruptedOnDiskIsCutBeforeItsLastByteForTheClientThenDroppedAndServedRight() throws Exception {
    byte[] good = LARGE_HIT_BODY;
    byte[] bad = storedOnNode1ThenCorrupted(LARGE_HIT, good);

    // Raw HTTP: the JDK client would hide a cut response behind an exception (or send it again).
    RawHttp.Response cut = RawHttp.exchange(address(0), "GET", "/up" + LARGE_HIT);
    assertFalse(cut.complete(), "node 1 ended its corrupt stored body as complete (" + cut.body().length + " bytes, "
        + (java.util.Arrays.equals(bad, cut.body()) ? "the corrupt bytes" : "other bytes") + ")");
    if (cut.status() != 0) { // an abort may reset the connection before the head is read
      assertEquals(200, cut.status());
      assertEquals("HIT", cut.xCache());
      assertEquals(String.valueOf(SIZE), cut.header("Content-Length"));
      assertTrue(cut.body().length < SIZE, "cut before the last byte: " + cut.body().length + " of " + SIZE);
      assertArrayEquals(java.util.Arrays.copyOf(bad, cut.body().length), cut.body(), "what came before the cut");
    }
    String sha = sha256(good);
    Await.until("node 1 drops its bad copy", Duration.ofSeconds(30), () -> blobs(0, sha).isEmpty());

    // The next request on node 1 is a miss: the right bytes from the other holder or the upstream.
    HttpResponse<byte[]> next = Http.getBytes(cluster.base(0) + "/up" + LARGE_HIT);
    assertEquals(200, next.statusCode());
    assertTrue(Set.of("MISS", "PEER").contains(Http.xCache(next)), "node 1 after dropping its copy: " + Http.xCache(next));
    assertArrayEquals(good, next.body());
    int fetched = upstream.requests(LARGE_HIT);
    assertTrue(fetched == 1 || fetched == 2, "fetched from the upstream at most once more: " + fetched);
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(i) + "/up" + LARGE_HIT);
      assertEquals(200, r.statusCode(), "node " + (i + 1));
      assertArrayEquals(good, r.body(), "node " + (i + 1));
    }
    assertEquals(fetched, upstream.requests(LARGE_HIT), "nothing fetched again once node 1 had the right bytes");
  }

  @Test
  void aSmallHitCorruptedOnDiskIsNeverServedToTheClientButFetchedAgain() throws Exception {
    byte[] good = SMALL_HIT_BODY;
    byte[] bad = storedOnNode1ThenCorrupted(SMALL_HIT, good);

    // Read whole and verified before it is answered: the corruption turns node 1's hit into a miss.
    HttpResponse<byte[]> r = Http.getBytes(cluster.base(0) + "/up" + SMALL_HIT);
    assertEquals(200, r.statusCode());
    assertTrue(Set.of("MISS", "PEER").contains(Http.xCache(r)), "node 1 served its corrupt copy as " + Http.xCache(r));
    assertArrayEquals(good, r.body());
    int fetched = upstream.requests(SMALL_HIT);
    assertTrue(fetched == 1 || fetched == 2, "fetched from the upstream at most once more: " + fetched);
    for (Path p : blobs(0, sha256(good))) {
      assertFalse(java.util.Arrays.equals(Files.readAllBytes(p), bad), "node 1 keeps no corrupt copy");
    }
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> again = Http.getBytes(cluster.base(i) + "/up" + SMALL_HIT);
      assertEquals(200, again.statusCode(), "node " + (i + 1));
      assertArrayEquals(good, again.body(), "node " + (i + 1));
    }
    assertEquals(fetched, upstream.requests(SMALL_HIT), "nothing fetched again once node 1 had the right bytes");
  }

  /**
   * A jar of the {@code bp} repository, its {@code .sha512} (of {@link #good}) always published.
   * Until {@link #armed} the jar itself is 404 (the warm-up); then its first request (the key's
   * fetch) is held until {@link #release} and answered {@link #heldAnswer}, and every later one
   * (a direct fetch) gets {@link #corrupt} while {@link #tampered}, else {@link #good}.
   */
  private static final class Jar {
    final byte[] good;
    final byte[] corrupt;
    volatile boolean armed;
    volatile boolean tampered = true;
    volatile byte[] heldAnswer;
    final AtomicInteger armedRequests = new AtomicInteger();
    /** When (System.nanoTime) the first request after arming reached the upstream. */
    volatile long heldAt;
    /** The key's fetch reached the upstream and is held there, before its headers. */
    final CountDownLatch held = new CountDownLatch(1);
    final CountDownLatch release = new CountDownLatch(1);

    Jar(byte[] good) {
      this.good = good;
      this.corrupt = good.clone();
      corrupt[good.length / 2] ^= 0x01; // same size, one bit off: only hashing finds it
    }

    void answer(HttpExchange exchange) throws Exception {
      if (!armed) {
        FakeUpstream.send(exchange, 404, new byte[0]);
        return;
      }
      if (armedRequests.incrementAndGet() == 1) {
        heldAt = System.nanoTime();
        held.countDown();
        if (!release.await(60, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the held fetch was never released");
        }
        FakeUpstream.send(exchange, 200, heldAnswer);
        return;
      }
      FakeUpstream.send(exchange, 200, tampered ? corrupt : good);
    }
  }

  /**
   * What one client got: status ({@code -1}: the connection was cut before the headers),
   * {@code X-Cache}, the bytes read, and the failure that cut the response short, if any.
   */
  private record Got(int status, String xCache, byte[] body, IOException cut) {}

  private static CompletableFuture<HttpResponse<InputStream>> ask(String url) {
    return Http.CLIENT.sendAsync(Http.get(url), HttpResponse.BodyHandlers.ofInputStream());
  }

  /** Reads a response's body to its end or to the failure that cuts it, keeping what arrived before. */
  private static Got read(CompletableFuture<HttpResponse<InputStream>> sent) throws Exception {
    HttpResponse<InputStream> r;
    try {
      r = sent.get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof IOException cut) {
        return new Got(-1, null, new byte[0], cut);
      }
      throw e;
    }
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    IOException cut = null;
    try (InputStream in = r.body()) {
      in.transferTo(got);
    } catch (IOException e) {
      cut = e;
    }
    return new Got(r.statusCode(), Http.xCache(r), got.toByteArray(), cut);
  }

  /**
   * A jar at {@code file} (under the repository) whose key's entity is started and known to every
   * node: each node asks it once while the upstream says 404 (remembered 1 ms), so the budgets
   * below measure the held fetch, not a shard's cold start; its {@code .sha512} is cached then too.
   */
  private Jar warmed(String file, long seed) throws Exception {
    Jar jar = new Jar(CrashRestartIT.bytes(seed, JAR_SIZE));
    jars.put(file, jar);
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> warm = Http.getBytes(cluster.base(i) + "/bp" + file);
      assertEquals(404, warm.statusCode(), "node " + (i + 1) + " before the jar exists");
    }
    jar.armed = true;
    return jar;
  }

  /**
   * Waits until the jar's first request reached the upstream, and checks it came before any
   * client sent at {@code sentAt} could have run out of budget: so it is the key's fetch, not a
   * direct one (the upstream cannot tell them apart otherwise).
   */
  private static void heldIsTheKeysFetch(Jar jar, long sentAt) throws InterruptedException {
    Await.latch(jar.held);
    long took = jar.heldAt - sentAt;
    assertTrue(took < BUDGET.toNanos(), "the key's fetch reached the upstream only after " + took / 1_000_000
        + " ms, more than the budget: the held request may be a direct fetch (machine too busy?)");
  }

  /** Waits until no node runs a fetch of the {@code bp} repository. */
  private void fetchesEnded() throws Exception {
    for (int i = 0; i < 3; i++) {
      int node = i;
      Await.until(Duration.ofSeconds(30), () -> "node " + (node + 1) + " still runs a fetch of bp",
          () -> inflight(node) == 0);
    }
  }

  private double inflight(int i) throws Exception {
    Matcher m = INFLIGHT.matcher(new String(Http.getBytes(cluster.base(i) + "/-/metrics").body(), StandardCharsets.UTF_8));
    return m.find() ? Double.parseDouble(m.group(1)) : 0;
  }

  @Test
  void aBypassedBodyThatDoesNotMatchThePublishedChecksumIsCutOnEveryNodeAndNothingIsCached() throws Exception {
    String file = "/g/a/1/a-1.jar";
    Jar jar = warmed(file, 8101);
    int before = upstream.requests("/m2" + file);
    int clients = 6; // two on each node
    List<CompletableFuture<HttpResponse<InputStream>>> sent = new ArrayList<>();
    long sentAt = System.nanoTime();
    for (int c = 0; c < clients; c++) {
      sent.add(ask(cluster.base(c % 3) + "/bp" + file));
    }
    heldIsTheKeysFetch(jar, sentAt);
    for (int c = 0; c < clients; c++) {
      String who = "client " + c + " on node " + (c % 3 + 1);
      Got g = read(sent.get(c));
      assertFalse(g.status() == 200 && g.cut() == null && java.util.Arrays.equals(jar.corrupt, g.body()),
          who + ": the bytes that do not match the .sha512 reached the client complete");
      if (g.status() == 200) { // what Bypass does: the headers, then the body cut before its last byte
        assertEquals("BYPASS", g.xCache(), who);
        assertNotNull(g.cut(), who + ": the body ended as if complete (" + g.body().length + " of " + JAR_SIZE + " bytes)");
        assertTrue(g.body().length < JAR_SIZE, who + ": " + g.body().length + " of " + JAR_SIZE + " bytes before the cut");
        assertArrayEquals(java.util.Arrays.copyOf(jar.corrupt, g.body().length), g.body(), who + ": what came before the cut");
      } else if (g.status() != -1) { // also B1: the bytes checked before the headers, a 502
        assertEquals(502, g.status(), who);
      }
    }
    assertEquals(before + 1 + clients, upstream.requests("/m2" + file), "the key's held fetch and one direct fetch per client");

    // The key's fetch gets the bad bytes too: B1, nothing stored anywhere.
    jar.heldAnswer = jar.corrupt;
    jar.release.countDown();
    fetchesEnded();
    for (int i = 0; i < 3; i++) {
      assertEquals(List.of(), blobs(i, sha256(jar.corrupt)), "node " + (i + 1) + " stored the bytes that do not match");
    }

    // The upstream fixed: the next request leads a new fetch (nothing cached), then every node serves it.
    jar.tampered = false;
    HttpResponse<byte[]> first = Http.getBytes(cluster.base(1) + "/bp" + file);
    assertEquals(200, first.statusCode());
    assertEquals("MISS", Http.xCache(first), "nothing of the bypasses or the failed fetch was cached");
    assertArrayEquals(jar.good, first.body());
    for (int i : new int[] {0, 2, 1}) {
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(i) + "/bp" + file);
      assertEquals(200, r.statusCode(), "node " + (i + 1));
      assertTrue(Set.of("HIT", "PEER").contains(Http.xCache(r)), "node " + (i + 1) + ": " + Http.xCache(r));
      assertArrayEquals(jar.good, r.body(), "node " + (i + 1));
    }
    assertEquals(before + 1 + clients + 1, upstream.requests("/m2" + file), "one fetch after the fix");
  }

  @Test
  void aBypassedBodyThatMatchesThePublishedChecksumIsServedWholeOnEveryNode() throws Exception {
    String file = "/g/a/2/a-2.jar";
    Jar jar = warmed(file, 8102);
    jar.tampered = false;
    int before = upstream.requests("/m2" + file);
    List<CompletableFuture<HttpResponse<InputStream>>> sent = new ArrayList<>();
    long sentAt = System.nanoTime();
    for (int i = 0; i < 3; i++) {
      sent.add(ask(cluster.base(i) + "/bp" + file));
    }
    heldIsTheKeysFetch(jar, sentAt);
    for (int i = 0; i < 3; i++) {
      Got g = read(sent.get(i));
      assertEquals(200, g.status(), "node " + (i + 1));
      assertEquals("BYPASS", g.xCache(), "node " + (i + 1));
      assertNull(g.cut(), "node " + (i + 1));
      assertArrayEquals(jar.good, g.body(), "node " + (i + 1) + ": a body that matches is passed whole");
    }
    assertEquals(before + 1 + 3, upstream.requests("/m2" + file), "the key's held fetch and one direct fetch per client");

    // The direct fetches stored nothing; the key's fetch commits when it completes.
    jar.heldAnswer = jar.good;
    jar.release.countDown();
    fetchesEnded();
    for (int i = 0; i < 3; i++) {
      HttpResponse<byte[]> r = Http.getBytes(cluster.base(i) + "/bp" + file);
      assertEquals(200, r.statusCode(), "node " + (i + 1));
      assertTrue(Set.of("HIT", "PEER").contains(Http.xCache(r)), "node " + (i + 1) + ": " + Http.xCache(r));
      assertArrayEquals(jar.good, r.body(), "node " + (i + 1));
    }
    assertEquals(before + 1 + 3, upstream.requests("/m2" + file), "the committed fetch serves every node");
  }
}
