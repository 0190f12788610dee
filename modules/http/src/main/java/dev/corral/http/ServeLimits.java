package dev.corral.http;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How much one node lets requests cost it: the heap for metadata held whole, and the rate of
 * misses one client address may send upstream.
 *
 * @param metadataMemoryBytes bytes of metadata bodies held whole at once, in reads and rewrites
 *     in progress (and, as much again, in remembered rewrites); {@code --metadata-memory}
 * @param metadataWait how long a request waits for room in that memory before its 503
 * @param missRate misses per client address, when limited; {@code --miss-rate-limit}
 */
public record ServeLimits(long metadataMemoryBytes, Duration metadataWait, Optional<MissRate> missRate) {

  /** How long a request waits for metadata memory before it is answered 503. */
  public static final Duration DEFAULT_METADATA_WAIT = Duration.ofSeconds(5);

  /**
   * A token bucket per client address: {@code burst} tokens, refilled at {@code perSecond}; a miss
   * takes one.
   */
  public record MissRate(double perSecond, long burst) {
    public MissRate {
      if (!(perSecond > 0) || burst < 1) {
        throw new IllegalArgumentException("a miss rate needs a positive rate and a burst of at least 1");
      }
    }
  }

  public ServeLimits {
    Objects.requireNonNull(metadataWait, "metadataWait");
    Objects.requireNonNull(missRate, "missRate");
    if (metadataMemoryBytes < 1) {
      throw new IllegalArgumentException("metadata memory must be at least 1 byte");
    }
  }

  /** A quarter of the heap this JVM may grow to, at least 16 MiB. */
  public static long defaultMetadataMemory() {
    return Math.max(16L * 1024 * 1024, Runtime.getRuntime().maxMemory() / 4);
  }

  /** The defaults: a quarter of the heap for metadata, misses not limited. */
  public static ServeLimits defaults() {
    return new ServeLimits(defaultMetadataMemory(), DEFAULT_METADATA_WAIT, Optional.empty());
  }
}
