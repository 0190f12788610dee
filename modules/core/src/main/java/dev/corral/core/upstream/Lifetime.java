package dev.corral.core.upstream;

import dev.corral.core.CborSerializable;
import java.time.Duration;
import java.util.List;

/**
 * How long a key's stored copy stays fresh, as its repository says (per request, with the key):
 * <ul>
 *   <li>{@link #IMMUTABLE}: forever (artifacts that never change under their URL);
 *   <li>{@link #METADATA}: the repository's {@code metadata-ttl} (package metadata);
 *   <li>{@link #fixed}: a TTL of its own (a generic repository's {@code ttl} rule);
 *   <li>{@link #UPSTREAM}: what the upstream's {@link CacheDirectives} say, kept with the stored
 *       copy's headers (a generic repository's path that no rule matches); forever when they
 *       say nothing. Only this kind honours {@code no-store}/{@code private} and
 *       {@code must-revalidate}.
 * </ul>
 * A copy past its lifetime is revalidated with a conditional request (docs/architecture.md,
 * "Freshness of mutable metadata").
 *
 * @param ttlMillis the TTL of a {@link Kind#FIXED} lifetime, else 0
 */
public record Lifetime(Kind kind, long ttlMillis) implements CborSerializable {

  public enum Kind { IMMUTABLE, METADATA, FIXED, UPSTREAM }

  public static final Lifetime IMMUTABLE = new Lifetime(Kind.IMMUTABLE, 0);
  public static final Lifetime METADATA = new Lifetime(Kind.METADATA, 0);
  public static final Lifetime UPSTREAM = new Lifetime(Kind.UPSTREAM, 0);

  public Lifetime {
    if (kind == null) {
      throw new IllegalArgumentException("a lifetime needs a kind");
    }
    if (ttlMillis < 0 || (kind != Kind.FIXED && ttlMillis != 0)) {
      throw new IllegalArgumentException("a TTL belongs to a fixed lifetime only, and is not negative");
    }
  }

  /** Fresh for {@code ttl} after each fetch or revalidation, whatever the upstream says. */
  public static Lifetime fixed(Duration ttl) {
    return new Lifetime(Kind.FIXED, ttl.toMillis());
  }

  /** The lifetime a Join of an older node meant by its {@code mutable} flag. */
  public static Lifetime of(boolean mutable) {
    return mutable ? METADATA : IMMUTABLE;
  }

  /** Whether a stored copy of this key can ever go stale (what {@code mutable} meant before). */
  public boolean mayChange() {
    return kind != Kind.IMMUTABLE;
  }

  /**
   * How long a stored copy with {@code headers} is fresh after it was fetched or revalidated, in
   * milliseconds; -1: forever.
   *
   * @param metadataTtl the repository's metadata TTL
   * @param fetchedAtMillis when the copy arrived (for an {@code Expires} without {@code Date})
   */
  public long freshForMillis(List<Header> headers, Duration metadataTtl, long fetchedAtMillis) {
    return switch (kind) {
      case IMMUTABLE -> -1;
      case METADATA -> metadataTtl.toMillis();
      case FIXED -> ttlMillis;
      case UPSTREAM -> {
        CacheDirectives said = CacheDirectives.of(headers, fetchedAtMillis);
        yield said.immutable() ? -1 : said.lifetimeMillis();
      }
    };
  }

  /** Whether a stale copy with {@code headers} may be served while it is revalidated or after it failed. */
  public boolean mayServeStale(List<Header> headers) {
    return kind != Kind.UPSTREAM || !CacheDirectives.of(headers, 0).mustRevalidate();
  }

  /** Whether the upstream's {@code no-store} and {@code private} are honoured (the body is not stored). */
  public boolean honoursNoStore() {
    return kind == Kind.UPSTREAM;
  }
}
