package dev.corral.core.download;

import dev.corral.core.key.Digest;
import java.util.Objects;

/**
 * Where a fetch gets a key's bytes and what they must hash to (SEMANTICS K1, B1).
 *
 * @param url the upstream URL the fetch asks: the key's own, or one a document from the same
 *     upstream named for it (an npm packument's {@code dist.tarball})
 * @param expected the digest the bytes must have, or {@code null} when none is known; bytes that
 *     do not match are never stored or served ({@link Failure#BAD_BYTES})
 */
public record FetchSource(String url, Digest expected) {
  public FetchSource {
    Objects.requireNonNull(url, "url");
  }
}
