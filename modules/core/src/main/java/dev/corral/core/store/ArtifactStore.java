package dev.corral.core.store;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * One node's local store of artifact bytes: content-addressed blobs on disk plus an in-memory
 * index from key to blob, rebuilt from disk at start-up (SEMANTICS L3). Thread-safe.
 *
 * <p>Contract:
 *
 * <ul>
 *   <li>A blob is written to a temporary file and renamed into place, and a crash never leaves a
 *       half file that is served: what outlives a restart is only ever on disk whole. A commit
 *       may become durable after it returns (DiskStore's sync threads): a crash then loses the
 *       last commits whole, never half of one.
 *   <li>{@link #commit} makes a key visible atomically; after it returns, {@link #lookup} finds
 *       it (SEMANTICS F3).
 *   <li>The total size of blobs stays under the configured maximum by evicting the least
 *       recently used keys; a blob is deleted when no key refers to it any more.
 *   <li>A key whose blob is missing or has the wrong size is dropped by {@link #lookup}, never
 *       returned (SEMANTICS F2).
 * </ul>
 */
public interface ArtifactStore {

  /** The key's artifact when this node holds its bytes; marks it recently used. */
  Optional<StoredArtifact> lookup(ArtifactKey key);

  /**
   * The key's artifact as the index has it, marked recently used, without checking its blob: for
   * a caller that serves bytes it already holds in memory, verified against the artifact's
   * SHA-256 ({@link HotBlobs}), and calls {@link #lookup} when it holds none. A hit then costs
   * no file system call.
   */
  default Optional<StoredArtifact> indexed(ArtifactKey key) {
    return lookup(key);
  }

  /**
   * Starts a new blob.
   *
   * @param extraAlgorithm a JCA digest name to compute besides SHA-256 (e.g. {@code SHA-512}),
   *     or null
   */
  BlobWriter newBlob(String extraAlgorithm) throws IOException;

  /**
   * Moves a sealed blob into place and records it as the key's bytes, replacing any earlier
   * record of that key. Evicts least recently used keys if the store is over its maximum.
   */
  default StoredArtifact commit(ArtifactKey key, BlobWriter blob, List<Header> headers) throws IOException {
    return commit(key, blob, headers, -1);
  }

  /**
   * As {@link #commit(ArtifactKey, BlobWriter, List)}, recording {@code fetchedAtMillis} as the
   * copy's fetch time ({@code -1}: now). A replica of mutable metadata is as old as the holder's
   * copy: committing it with now and correcting the time afterwards would let a request between
   * the two see a stale copy as fresh.
   */
  StoredArtifact commit(ArtifactKey key, BlobWriter blob, List<Header> headers, long fetchedAtMillis)
      throws IOException;

  /** Updates the headers and fetched-at time of a stored key (a revalidation). */
  Optional<StoredArtifact> touch(ArtifactKey key, List<Header> headers, long fetchedAtMillis)
      throws IOException;

  /** The whole blob in memory; for small artifacts. Fails if the bytes do not hash to sha256. */
  ByteString readAll(StoredArtifact artifact) throws IOException;

  /**
   * Streams {@code length} bytes of the blob from {@code offset}, in bounded memory. The source
   * fails if the blob vanished or is shorter than expected. A read of the whole blob is verified
   * (F2): it fails before its last byte if the bytes do not hash to sha256, and the store then
   * forgets the blob and every key pointing to it. A partial read is not verified.
   */
  Source<ByteString, NotUsed> read(StoredArtifact artifact, long offset, long length);

  /** Forgets the key (and deletes its blob if nothing else refers to it). True if it was held. */
  boolean remove(ArtifactKey key) throws IOException;

  /**
   * The artifact stored under the key id (for purges, which know keys by id only); empty when not
   * held. Its blob is not checked.
   */
  default Optional<StoredArtifact> held(String keyId) {
    return Optional.empty();
  }

  /** Forgets the key with this id, as {@link #remove}. True if it was held. */
  default boolean remove(String keyId) throws IOException {
    return false;
  }

  /**
   * The size of the committed blob named {@code sha256}, when this store holds one (whichever key
   * refers to it). For the internal peer endpoint, which serves blobs by content address.
   */
  default OptionalLong blobSize(String sha256) {
    return OptionalLong.empty();
  }

  /**
   * The stored artifacts that pass {@code filter}, copied out in no particular order without
   * marking any as used: for listings (the admin API), never for serving. Runs the filter over
   * every key held, under the store's lock; while the index loads, waits for it first.
   */
  List<StoredArtifact> matching(java.util.function.Predicate<StoredArtifact> filter);

  /**
   * Removes every key not used (committed, served or revalidated) for at least its repository's
   * age, {@code maxUnusedMillis.applyAsLong(repo)} (0 or less: never), and returns what went; each
   * is told to the eviction listener as an evicted key is. {@code shortestMillis} is the smallest
   * of those ages: a store kept in use order stops at the first key used more recently.
   */
  default List<StoredArtifact> removeUnused(java.util.function.ToLongFunction<String> maxUnusedMillis,
      long shortestMillis) throws IOException {
    return List.of();
  }

  /**
   * Whether the index of the keys held is still being loaded (after a start): lookups then find
   * every key held, but {@link #matching}, {@link #totalSize} and {@link #keyCount} do not know them
   * all yet.
   */
  default boolean indexLoading() {
    return false;
  }

  /** Total bytes of all blobs (while the index loads: of those known so far). */
  long totalSize();

  /** Number of keys held (while the index loads: of those known so far). */
  int keyCount();
}
