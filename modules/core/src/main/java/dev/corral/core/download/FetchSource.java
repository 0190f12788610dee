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
 * @param unverified the key is of a kind that is verified, but its upstream published no digest
 *     for it (a Maven artifact without any checksum file): fetched without one, and counted
 *     ({@code corral_unverified_fetches_total}); implies {@code expected == null}
 */
public record FetchSource(String url, Digest expected, boolean unverified) {
  public FetchSource {
    Objects.requireNonNull(url, "url");
    if (unverified && expected != null) {
      throw new IllegalArgumentException("an unverified source has no expected digest");
    }
  }

  /** A source with the digest {@code expected}, or none known ({@code null}) for a key that is not verified. */
  public FetchSource(String url, Digest expected) {
    this(url, expected, false);
  }

  /** A key that should be verified, but whose upstream publishes no digest for it. */
  public static FetchSource unverified(String url) {
    return new FetchSource(url, null, true);
  }
}
