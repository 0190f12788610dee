package dev.corral.core.fetch;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.BlobWriter;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/** A store whose commit throws an unexpected exception for chosen keys: a bug in the fetch's code path. */
final class FaultyStore implements ArtifactStore {
  private final ArtifactStore store;
  /** Key ids whose commit throws. */
  final Set<String> brokenCommits = ConcurrentHashMap.newKeySet();

  FaultyStore(ArtifactStore store) {
    this.store = store;
  }

  @Override
  public Optional<StoredArtifact> lookup(ArtifactKey key) {
    return store.lookup(key);
  }

  @Override
  public BlobWriter newBlob(String extraAlgorithm) throws IOException {
    return store.newBlob(extraAlgorithm);
  }

  @Override
  public StoredArtifact commit(ArtifactKey key, BlobWriter blob, List<Header> headers, long fetchedAtMillis)
      throws IOException {
    if (brokenCommits.contains(key.id())) {
      throw new IllegalStateException("a bug in commit");
    }
    return store.commit(key, blob, headers, fetchedAtMillis);
  }

  @Override
  public Optional<StoredArtifact> touch(ArtifactKey key, List<Header> headers, long fetchedAtMillis)
      throws IOException {
    return store.touch(key, headers, fetchedAtMillis);
  }

  @Override
  public ByteString readAll(StoredArtifact artifact) throws IOException {
    return store.readAll(artifact);
  }

  @Override
  public Source<ByteString, NotUsed> read(StoredArtifact artifact, long offset, long length) {
    return store.read(artifact, offset, length);
  }

  @Override
  public boolean remove(ArtifactKey key) throws IOException {
    return store.remove(key);
  }

  @Override
  public java.util.List<dev.corral.core.store.StoredArtifact> matching(
      java.util.function.Predicate<dev.corral.core.store.StoredArtifact> filter) {
    return store.matching(filter);
  }

  @Override
  public long totalSize() {
    return store.totalSize();
  }

  @Override
  public int keyCount() {
    return store.keyCount();
  }
}
