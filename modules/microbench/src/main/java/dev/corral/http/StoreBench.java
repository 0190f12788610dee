package dev.corral.http;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.BlobWriter;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Stream;
import org.apache.pekko.util.ByteString;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * The store's lookup of a held key among {@code keys} stored ones, from 2 threads (the
 * bench machine's cores): {@code indexed} (the index alone, what a hit held in memory pays) and
 * {@code lookup} (the index and a {@code stat} of the blob, what every other hit pays).
 */
@State(Scope.Benchmark)
@Threads(2)
public class StoreBench extends HitPathBench {
  @Param({"10000"})
  public int keys;

  private Path dir;
  private DiskStore store;
  private ArtifactKey[] held;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    dir = Files.createTempDirectory("corral-storebench");
    store = DiskStore.open(dir, 1L << 40, Clock.systemUTC());
    held = new ArtifactKey[keys];
    List<Header> headers = List.of(new Header("Content-Type", "application/octet-stream"), new Header("ETag", "\"x\""));
    for (int i = 0; i < keys; i++) {
      held[i] = ArtifactKey.of("bench", "http://upstream.example/files/" + i + ".bin");
      BlobWriter blob = store.newBlob(null);
      blob.write(ByteString.fromString("body " + i));
      store.commit(held[i], blob, headers);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Benchmark
  public Optional<StoredArtifact> indexed() {
    return store.indexed(held[ThreadLocalRandom.current().nextInt(keys)]);
  }

  @Benchmark
  public Optional<StoredArtifact> lookup() {
    return store.lookup(held[ThreadLocalRandom.current().nextInt(keys)]);
  }
}
