package dev.corral.core.store;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Writes a store of N artifacts in {@link DiskStore}'s own format, quickly (issue 14 item 7: start-up
 * with 100k and 1M cached artifacts): for each, a small blob under {@code blobs/} and its key
 * record under {@code keys/}, as a commit leaves them, without fsyncs and without the HTTP round
 * trips that filling a node through its front door would take. The keys are those of a generic
 * repository {@code bench} whose upstream is UPSTREAM (default {@code http://upstream.example}):
 * artifact i is {@code /bench/files/i.bin} on a node with {@code --repo bench=generic:UPSTREAM}.
 *
 * <pre>
 * java -cp modules/microbench/target/corral-microbench.jar dev.corral.core.store.StoreGenerator DATA_DIR N [UPSTREAM]
 * </pre>
 *
 * DATA_DIR is a node's data directory (the store goes in its {@code store/}, where a node keeps
 * it); it must not hold a store yet. {@code ./corral serve --data-dir DATA_DIR} then opens it.
 */
public final class StoreGenerator {
  private StoreGenerator() {}

  public static void main(String[] args) throws IOException {
    if (args.length != 2 && args.length != 3) {
      System.err.println("usage: StoreGenerator DATA_DIR N [UPSTREAM]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]).resolve("store");
    int n = Integer.parseInt(args[1]);
    if (Files.exists(dir.resolve("keys"))) {
      System.err.println(dir + " already holds a store");
      System.exit(2);
    }
    long started = System.nanoTime();
    String upstream = args.length == 3 ? args[2] : "http://upstream.example";
    generate(dir, n, System.currentTimeMillis(), upstream.endsWith("/") ? upstream : upstream + "/");
    System.out.printf("%d artifacts written to %s in %.1f s%n", n, dir, (System.nanoTime() - started) / 1e9);
  }

  static void generate(Path dir, int n, long fetchedAt, String upstream) throws IOException {
    ObjectMapper json = new ObjectMapper();
    Path blobs = dir.resolve("blobs");
    Path keys = dir.resolve("keys");
    OwnerOnly.createDirectories(dir.resolve("tmp"));
    List<Header> headers = List.of(new Header("Content-Type", "application/octet-stream"));
    for (int i = 0; i < n; i++) {
      byte[] body = ("artifact " + i + "\n").getBytes(StandardCharsets.UTF_8);
      String sha = Sha256.hex(body);
      ArtifactKey key = ArtifactKey.of("bench", upstream + "files/" + i + ".bin");
      String keyId = key.id();
      Path blobFan = blobs.resolve(sha.substring(0, 2));
      Path keyFan = keys.resolve(keyId.substring(0, 2));
      if (!Files.isDirectory(blobFan)) {
        OwnerOnly.createDirectories(blobFan);
      }
      if (!Files.isDirectory(keyFan)) {
        OwnerOnly.createDirectories(keyFan);
      }
      Files.write(blobFan.resolve(sha), body);
      StoredArtifact record = new StoredArtifact(keyId, key.canonical(), sha, body.length, headers, fetchedAt + i);
      Files.write(keyFan.resolve(keyId + ".json"), json.writeValueAsBytes(record));
    }
  }
}
