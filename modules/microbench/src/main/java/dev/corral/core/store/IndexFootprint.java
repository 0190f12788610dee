package dev.corral.core.store;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.upstream.Header;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;

/**
 * Heap that {@link DiskStore}'s index takes per key, and how long an open takes.
 *
 * <pre>
 * java -cp modules/microbench/target/corral-microbench.jar dev.corral.core.store.IndexFootprint DATA_DIR N [snapshot]
 * </pre>
 *
 * Writes a store of N artifacts with {@link StoreGenerator} (unless DATA_DIR already holds one),
 * opens it (a rebuild from the key records) and prints the heap in use after a full collection,
 * before and after the open, divided by N; then closes it (the index snapshot) and opens it again
 * from the snapshot, printing the same. With {@code snapshot}, writes only an index snapshot of
 * N keys as {@link StoreGenerator} would make them (no blobs, no key records: a million keys in
 * seconds, not 8 GiB of small files) and measures the open from it; the blobs are looked at only
 * when read, so the open is the same. Either way the store is left closed, with its snapshot.
 */
public final class IndexFootprint {
  private IndexFootprint() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: IndexFootprint DATA_DIR N [snapshot]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]).resolve("store");
    int n = Integer.parseInt(args[1]);
    if (args.length > 2 && args[2].equals("snapshot")) {
      writeSnapshot(dir, n, System.currentTimeMillis());
    } else {
      if (!Files.exists(dir.resolve("keys"))) {
        StoreGenerator.generate(dir, n, System.currentTimeMillis(), "http://upstream.example/");
      }
      open(dir).close();
    }
    open(dir).close(); // leaves the snapshot for a node to start from
  }

  private static DiskStore open(Path dir) throws Exception {
    long before = heapUsedAfterGc();
    long t0 = System.nanoTime();
    DiskStore store = DiskStore.open(dir, Long.MAX_VALUE, Clock.systemUTC());
    long openNanos = System.nanoTime() - t0;
    long after = heapUsedAfterGc();
    int keys = store.keyCount();
    System.out.printf("%d keys: opened in %.2f s (%s); heap %.1f MiB -> %.1f MiB after a full GC: %d bytes"
            + " per key%n", keys, openNanos / 1e9, store.openedFromSnapshot() ? "from the snapshot" : "rebuilt",
        before / 1048576.0, after / 1048576.0, keys == 0 ? 0 : (after - before) / keys);
    return store;
  }

  private static void writeSnapshot(Path dir, int n, long fetchedAt) throws Exception {
    OwnerOnly.createDirectories(dir.resolve("tmp"));
    List<Header> headers = List.of(new Header("Content-Type", "application/octet-stream"));
    KeyIndex entries = new KeyIndex(n);
    for (int i = 0; i < n; i++) {
      byte[] body = ("artifact " + i + "\n").getBytes(StandardCharsets.UTF_8);
      ArtifactKey key = ArtifactKey.of("bench", "http://upstream.example/files/" + i + ".bin");
      entries.put(
          new StoredArtifact(key.id(), key.canonical(), Sha256.hex(body), body.length, headers, fetchedAt + i),
          fetchedAt + i);
    }
    IndexSnapshot.write(dir.resolve("tmp").resolve("new.snapshot"), dir.resolve(IndexSnapshot.FILE_NAME), entries);
  }

  private static long heapUsedAfterGc() throws InterruptedException {
    for (int i = 0; i < 3; i++) {
      System.gc();
      Thread.sleep(100);
    }
    return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
  }
}
