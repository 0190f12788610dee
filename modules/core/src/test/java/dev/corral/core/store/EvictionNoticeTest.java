package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store says which keys it evicted (so the cluster's replica directory drops this node), and
 * finds committed blobs by content address (for the peer endpoint).
 */
class EvictionNoticeTest {
  @TempDir Path dir;

  private static StoredArtifact put(DiskStore store, ArtifactKey key, int size) throws IOException {
    BlobWriter w = store.newBlob(null);
    w.write(ByteString.fromArray(new byte[size]).concat(ByteString.fromString(key.url())));
    return store.commit(key, w, List.of());
  }

  @Test
  void evictedKeysAreReportedAfterTheCommitThatEvictedThem() throws IOException {
    DiskStore store = DiskStore.open(dir, 2500, Clock.systemUTC());
    List<String> evicted = new CopyOnWriteArrayList<>();
    store.onEvicted(evicted::add);
    ArtifactKey a = ArtifactKey.of("r", "http://upstream.example/a");
    ArtifactKey b = ArtifactKey.of("r", "http://upstream.example/b");
    ArtifactKey c = ArtifactKey.of("r", "http://upstream.example/c");
    put(store, a, 1000);
    put(store, b, 1000);
    assertEquals(List.of(), evicted);
    put(store, c, 1000); // over 2500: the least recently used (a) goes
    assertEquals(List.of(a.id()), evicted);
    assertTrue(store.lookup(a).isEmpty());
  }

  @Test
  void blobsAreFoundByTheirSha256() throws IOException {
    DiskStore store = DiskStore.open(dir, 1L << 30, Clock.systemUTC());
    StoredArtifact a = put(store, ArtifactKey.of("r", "http://upstream.example/a"), 10);
    assertEquals(a.size(), store.blobSize(a.sha256()).getAsLong());
    assertTrue(store.blobSize("0".repeat(64)).isEmpty());
    store.remove(ArtifactKey.of("r", "http://upstream.example/a"));
    assertTrue(store.blobSize(a.sha256()).isEmpty(), "gone with its last key");
  }
}
