package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.record.Record;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.persistence.state.javadsl.GetObjectResult;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SEMANTICS L3 and F3 across a restart: a node closed and started again on the same data
 * directory, with the same repository URL, serves what is on its disk without asking the
 * upstream (both a small body and one above the inline limit). The close writes the store's index
 * snapshot and the next start loads it (a crash-restart, which rebuilds, is {@code CrashRestartIT}).
 */
class RestartHttpTest {

  @Test
  void aRestartedNodeServesItsDiskWithoutAskingTheUpstream(@TempDir Path dir) throws Exception {
    byte[] small = TestNode.bytes(2048, 31);
    byte[] large = TestNode.bytes(256 * 1024, 32);
    try (FakeUpstream upstream = new FakeUpstream((exchange, n) -> {
      exchange.getResponseHeaders().add("Content-Type", "application/x-test");
      exchange.getResponseHeaders().add("ETag", "\"r1\"");
      FakeUpstream.send(exchange, 200, exchange.getRequestURI().getPath().endsWith("large.bin") ? large : small);
    })) {
      String config = "corral.repos.up.inline-limit = 64KiB";
      HttpClient client = TestNode.client();
      try (CorralServer first = TestNode.start(dir, upstream.url("/"), config)) {
        assertEquals("MISS", xCache(TestNode.get(client, first, "/up/r/small.bin")));
        assertEquals("MISS", xCache(TestNode.get(client, first, "/up/r/large.bin")));
        assertEquals("HIT", xCache(TestNode.get(client, first, "/up/r/small.bin")));
      }
      assertEquals(2, upstream.requests());
      Path snapshot = dir.resolve("data").resolve("store").resolve("index.snapshot");
      assertTrue(Files.exists(snapshot), "the clean close wrote the index snapshot");

      try (CorralServer second = TestNode.start(dir, upstream.url("/"), config)) {
        assertFalse(Files.exists(snapshot), "the start loaded it and used it up");
        HttpResponse<byte[]> r = TestNode.get(client, second, "/up/r/small.bin");
        assertEquals(200, r.statusCode());
        assertEquals("HIT", xCache(r));
        assertArrayEquals(small, r.body());
        assertEquals("\"r1\"", r.headers().firstValue("ETag").orElse(null));
        assertEquals("application/x-test", r.headers().firstValue("Content-Type").orElse(null));
        HttpResponse<byte[]> l = TestNode.get(client, second, "/up/r/large.bin");
        assertEquals(200, l.statusCode());
        assertEquals("HIT", xCache(l));
        assertArrayEquals(large, l.body());
        assertEquals(2, upstream.requests(), "the restarted node did not ask the upstream");
      }
    }
  }

  /**
   * Issue 14 item 7: a node is ready before its store's index is loaded, and meanwhile serves what
   * it holds from the key records on disk (HIT, no upstream request), says so in
   * {@code corral_store_index_loading}, and answers the admin listings, which would wait for the
   * load, 503 with Retry-After. The load is held back by the test, then let go.
   */
  @Test
  void aRestartedNodeIsReadyAndServesItsDiskBeforeItsIndexIsLoaded(@TempDir Path dir) throws Exception {
    byte[] body = TestNode.bytes(4096, 34);
    try (FakeUpstream upstream = new FakeUpstream((exchange, n) -> FakeUpstream.send(exchange, 200, body))) {
      String admin = "adm-restart-0123456789";
      Path tokenFile = dir.resolve("admin-token");
      Files.writeString(tokenFile, admin + "\n");
      HttpClient client = TestNode.client();
      try (CorralServer first = TestNode.start(dir, upstream.url("/"), "", "--admin-token-file", tokenFile.toString())) {
        assertEquals("MISS", xCache(TestNode.get(client, first, "/up/r/one.bin")));
        assertEquals("MISS", xCache(TestNode.get(client, first, "/up/r/two.bin")));
      }
      java.util.concurrent.CompletableFuture<Runnable> load = new java.util.concurrent.CompletableFuture<>();
      CorralServer.INDEX_LOADS_HELD.put(dir.resolve("data").toAbsolutePath().normalize(), load::complete);
      try (CorralServer second = TestNode.start(dir, upstream.url("/"), "", "--admin-token-file", tokenFile.toString())) {
        Runnable heldLoad = load.get(10, TimeUnit.SECONDS); // handed over once the node is ready
        assertEquals(200, TestNode.get(client, second, "/-/health/ready").statusCode());
        assertEquals(1.0, loadingGauge(client, second));
        HttpResponse<byte[]> r = TestNode.get(client, second, "/up/r/one.bin");
        assertEquals("HIT", xCache(r));
        assertArrayEquals(body, r.body());
        HttpResponse<byte[]> listing = TestNode.get(client, second, "/-/admin/repos", "Authorization", "Bearer " + admin);
        assertEquals(503, listing.statusCode());
        assertEquals("5", listing.headers().firstValue("Retry-After").orElse(null));

        heldLoad.run();
        assertEquals(0.0, loadingGauge(client, second));
        assertEquals(200, TestNode.get(client, second, "/-/admin/repos", "Authorization", "Bearer " + admin).statusCode());
        assertEquals("HIT", xCache(TestNode.get(client, second, "/up/r/two.bin")));
        assertEquals(2, second.node().store().keyCount());
      }
      assertEquals(2, upstream.requests(), "the restarted node did not ask the upstream");
    } finally {
      CorralServer.INDEX_LOADS_HELD.remove(dir.resolve("data").toAbsolutePath().normalize());
    }
  }

  private static double loadingGauge(HttpClient client, CorralServer node) {
    String text = new String(TestNode.get(client, node, "/-/metrics").body(), java.nio.charset.StandardCharsets.UTF_8);
    return Scrape.parse(text).value("corral_store_index_loading").orElseThrow();
  }

  /**
   * Issue 14: the record of a key new to a node is inserted without a read first. A node whose
   * store lost a key that the database still records (the store deleted here) fetches it again:
   * the insert fails on the real database, the record is read, and the write updates it.
   */
  @Test
  void aKeyTheDatabaseAlreadyRecordsHasItsRecordUpdatedWhenFetchedAgain(@TempDir Path dir) throws Exception {
    byte[] body = TestNode.bytes(2048, 33);
    try (FakeUpstream upstream = new FakeUpstream((exchange, n) -> FakeUpstream.send(exchange, 200, body))) {
      String pid = PersistenceId.of("Fetch", ArtifactKey.of("up", upstream.url("/r/again.bin")).id()).id();
      HttpClient client = TestNode.client();
      try (CorralServer first = TestNode.start(dir, upstream.url("/"), "")) {
        assertEquals("MISS", xCache(TestNode.get(client, first, "/up/r/again.bin")));
        TestNode.await("the new key's record", Duration.ofSeconds(10), () -> read(first, pid).revision() == 1);
      }
      try (var files = Files.walk(dir.resolve("data").resolve("store"))) {
        files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
      }
      try (CorralServer second = TestNode.start(dir, upstream.url("/"), "")) {
        assertEquals("MISS", xCache(TestNode.get(client, second, "/up/r/again.bin")));
        TestNode.await("the record updated", Duration.ofSeconds(10), () -> read(second, pid).revision() == 2);
        assertEquals(2048, read(second, pid).value().orElseThrow().cached().size());
      }
      assertEquals(2, upstream.requests());
    }
  }

  private static GetObjectResult<Record> read(CorralServer node, String pid) {
    try {
      return node.node().records().read(pid).toCompletableFuture().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
