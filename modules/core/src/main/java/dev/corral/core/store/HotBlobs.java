package dev.corral.core.store;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.util.Optional;
import org.apache.pekko.util.ByteString;

/**
 * Verified bytes of the most used small blobs, kept on the heap so that a hit costs no disk read
 * and no hashing. Keyed by SHA-256, so an entry can never be stale: the store decides whether a
 * key has bytes at all ({@link ArtifactStore#lookup}), this only saves reading them again.
 * Frequency-aware eviction (Caffeine's W-TinyLFU) is what we want here: a burst of one-off
 * artifacts must not push out the ones every build asks for.
 */
public final class HotBlobs {
  /** Blobs larger than this are never kept (they stream from disk in bounded memory). */
  public static final int MAX_ENTRY = 1024 * 1024;

  private final Cache<String, ByteString> cache;

  /** @param maxBytes the heap to use; 0 keeps nothing */
  public HotBlobs(long maxBytes) {
    this.cache = maxBytes <= 0 ? null
        : Caffeine.newBuilder()
            .maximumWeight(maxBytes)
            .<String, ByteString>weigher((sha, bytes) -> bytes.size())
            .build();
  }

  /** Whether a blob of this size may be kept. */
  public boolean fits(long size) {
    return cache != null && size <= MAX_ENTRY;
  }

  public Optional<ByteString> get(String sha256) {
    return cache == null ? Optional.empty() : Optional.ofNullable(cache.getIfPresent(sha256));
  }

  /** Keeps bytes whose SHA-256 the caller has verified. */
  public void put(String sha256, ByteString verifiedBytes) {
    if (fits(verifiedBytes.size())) {
      cache.put(sha256, verifiedBytes);
    }
  }
}
