package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.RawHttp;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * SEMANTICS F2 and B1 on the way out (issue 13 item 5): what a node serves from its store is
 * verified. A stored blob corrupted on disk with its size unchanged is never answered as a
 * complete body: a large hit streams from disk hashed as it goes and is cut before its last byte,
 * a small one is read whole and verified before it is answered. Either way the bad copy is
 * dropped and the next request is a MISS that fetches the right bytes.
 *
 * <p>The memory cache is off, so every hit reads the disk.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class VerifiedServeHttpTest {
  private static final int MIB = 1024 * 1024;

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().config(n -> "corral.memory-cache-size = 0\n");

  @Test
  void aLargeHitCorruptedOnDiskIsCutBeforeItsLastByteDroppedAndFetchedAgain() throws Exception {
    byte[] body = TestNode.bytes(2 * MIB, 21);
    node.paths.put("/verify/large.bin", (exchange, n) -> TestNode.ok(exchange, body));
    assertEquals("MISS", xCache(node.get("/up/verify/large.bin")));
    corrupt(body, 4096);

    RawHttp.Response cut = RawHttp.exchange(node.server().address(), "GET", "/up/verify/large.bin");
    assertFalse(cut.complete(), "a corrupt stored body is never ended as complete");
    if (cut.status() != 0) { // an abort may reset the connection before the head was read
      assertEquals(200, cut.status());
      assertEquals("HIT", cut.header("X-Cache"));
      assertEquals(String.valueOf(body.length), cut.header("Content-Length"));
      assertTrue(cut.body().length < body.length, "cut before the last byte: " + cut.body().length);
    }
    assertTrue(node.server().node().store().lookup(key("/verify/large.bin")).isEmpty(), "the bad copy is dropped");

    RawHttp.Response again = RawHttp.exchange(node.server().address(), "GET", "/up/verify/large.bin");
    assertEquals(200, again.status());
    assertEquals("MISS", again.header("X-Cache"));
    assertTrue(again.complete());
    assertArrayEquals(body, again.body());
    assertEquals(2, node.upstream().requests("/verify/large.bin"));
    assertEquals("HIT", xCache(node.get("/up/verify/large.bin")));
  }

  @Test
  void aSmallHitCorruptedOnDiskIsNeverServedButFetchedAgain() throws Exception {
    byte[] body = TestNode.bytes(10_000, 22);
    node.paths.put("/verify/small.bin", (exchange, n) -> TestNode.ok(exchange, body));
    assertEquals("MISS", xCache(node.get("/up/verify/small.bin")));
    corrupt(body, 9_999);

    // Read whole and verified before it is answered: the corruption turns the hit into a miss.
    HttpResponse<byte[]> r = node.get("/up/verify/small.bin");
    assertEquals(200, r.statusCode());
    assertEquals("MISS", xCache(r));
    assertArrayEquals(body, r.body());
    assertEquals(2, node.upstream().requests("/verify/small.bin"));
    assertEquals("HIT", xCache(node.get("/up/verify/small.bin")));
  }

  private ArtifactKey key(String path) {
    return ArtifactKey.of("up", node.upstream().url(path));
  }

  /** Flips one byte of the stored blob of {@code body}, keeping its size. */
  private void corrupt(byte[] body, int at) throws Exception {
    String sha = HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(body));
    Path blob = blobFile(node.dir(), sha);
    byte[] bad = body.clone();
    bad[at] ^= 1;
    Files.write(blob, bad);
  }

  static Path blobFile(Path dir, String sha) throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      List<Path> found = files.filter(p -> p.getFileName().toString().equals(sha)).toList();
      assertEquals(1, found.size(), "one stored blob " + sha + " under " + dir);
      return found.get(0);
    }
  }
}
