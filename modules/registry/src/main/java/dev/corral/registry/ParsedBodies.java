package dev.corral.registry;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.corral.core.key.ArtifactKey;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.function.Function;
import java.util.zip.Adler32;
import java.util.zip.CRC32C;
import org.apache.pekko.util.ByteString;

/**
 * What a repository parsed out of a metadata body (a packument's tarballs, a page's files),
 * remembered by the body's key and content fingerprint (length, CRC32C and Adler-32), so that every
 * tarball or file request does not parse its packument or page again: a checksum runs at memory
 * speed, a JSON or HTML parse an order of magnitude slower. A changed body has another
 * fingerprint and is parsed afresh. Bounded by the number of entries held.
 */
public final class ParsedBodies<V> {
  private final Cache<String, Map<String, V>> memo;

  public ParsedBodies(long maxEntries) {
    this.memo = Caffeine.newBuilder()
        .maximumWeight(maxEntries)
        .weigher((String k, Map<String, V> v) -> Math.max(1, v.size()))
        .build();
  }

  /**
   * What {@code parse} returned for the stored body with this digest, read and parsed only when
   * it was not remembered: a tarball request for a package with a 60 MiB packument then costs a
   * map lookup, not a read of the packument. Empty when the body is no longer held (not
   * remembered).
   */
  public Map<String, V> get(ArtifactKey key, String sha256, java.util.function.Supplier<java.util.Optional<ByteString>> body,
      Function<ByteString, Map<String, V>> parse) {
    String k = key.id() + ":sha256:" + sha256;
    Map<String, V> known = memo.getIfPresent(k);
    if (known != null) {
      return known;
    }
    java.util.Optional<ByteString> read = body.get();
    if (read.isEmpty()) {
      return Map.of();
    }
    return memo.get(k, x -> Map.copyOf(parse.apply(read.get())));
  }

  /** {@code parse(body)}, or what it returned before for the same key and content. */
  public Map<String, V> get(ArtifactKey key, ByteString body, Function<ByteString, Map<String, V>> parse) {
    return memo.get(key.id() + ':' + fingerprint(body), k -> Map.copyOf(parse.apply(body)));
  }

  /** Length, CRC32C and Adler-32 of a body: two checksums the JDK computes at memory speed. */
  public static String fingerprint(ByteString body) {
    CRC32C crc = new CRC32C();
    Adler32 adler = new Adler32();
    for (ByteBuffer b : body.getByteBuffers()) {
      crc.update(b.duplicate());
      adler.update(b);
    }
    return body.length() + ":" + Long.toHexString(crc.getValue()) + ":" + Long.toHexString(adler.getValue());
  }

  /** Bodies remembered now (for tests). */
  long size() {
    memo.cleanUp();
    return memo.estimatedSize();
  }
}
