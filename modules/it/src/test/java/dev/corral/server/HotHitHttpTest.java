package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A hit whose bytes are in the memory cache (read whole and verified against the artifact's
 * SHA-256 when they were put there) is answered from memory without a file system call (issue 14,
 * item 1): what happens to its blob on disk meanwhile does not change what the client gets. Every
 * answer from disk is still verified (VerifiedServeHttpTest, with the memory cache off).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HotHitHttpTest {
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed();

  @Test
  void aHitHeldInMemoryIsServedFromItWithoutLookingAtTheDisk() throws Exception {
    byte[] body = TestNode.bytes(10_000, 31);
    node.paths.put("/hot/small.bin", (exchange, n) -> TestNode.ok(exchange, body));
    assertEquals("MISS", xCache(node.get("/up/hot/small.bin")));
    assertEquals("HIT", xCache(node.get("/up/hot/small.bin")), "read from disk, verified, kept in memory");

    String sha = HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(body));
    Files.delete(VerifiedServeHttpTest.blobFile(node.dir(), sha));

    HttpResponse<byte[]> r = node.get("/up/hot/small.bin");
    assertEquals(200, r.statusCode());
    assertEquals("HIT", xCache(r), "answered from memory: the disk was not looked at");
    assertArrayEquals(body, r.body());
    assertEquals(1, node.upstream().requests("/hot/small.bin"));
  }
}
