package dev.corral.http.upstream;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How one repository talks to its upstream.
 *
 * @param connectTimeout how long establishing a TCP (and TLS) connection may take
 * @param firstByteTimeout how long an attempt may wait for the status and headers, counted from
 *     the moment it leaves the repository's queue ({@link PoolQueue}) for a pool connection
 * @param idleTimeout how long the body may go without a chunk; a large download is never cut for
 *     being large, only for stalling
 * @param retries how many more attempts one fetch makes after a connect error, a timeout, a reset
 *     before the headers, or a 5xx (never after a 4xx)
 * @param retryBackoff the pause before the first retry, doubled before each further one
 * @param maxRedirects how many redirects one fetch follows
 * @param maxConnections the connection pool's limit per upstream host; distinct keys run in
 *     parallel up to this many, and the repository's further requests wait in its {@link PoolQueue}
 * @param maxOpenRequests the pool's queue (a power of two, at least {@code maxConnections})
 * @param credential sent only to the repository's own origin, never to a redirect target elsewhere
 *     (and, with {@code registryTokens}, to the token realm its own origin names, under the rule of
 *     {@link UpstreamScope#admitRealm})
 * @param registryTokens whether a 401 from the repository's own origin with a {@code Bearer}
 *     challenge is answered with the registry token flow ({@link RegistryTokens}); off by default,
 *     on for OCI registries. A 401 without a Bearer challenge is the answer either way
 */
public record UpstreamSettings(
    Duration connectTimeout,
    Duration firstByteTimeout,
    Duration idleTimeout,
    int retries,
    Duration retryBackoff,
    int maxRedirects,
    int maxConnections,
    int maxOpenRequests,
    Optional<Credential> credential,
    boolean registryTokens) {

  public static final UpstreamSettings DEFAULTS =
      new UpstreamSettings(
          Duration.ofSeconds(5),
          Duration.ofSeconds(30),
          Duration.ofSeconds(30),
          1,
          Duration.ofSeconds(1),
          5,
          64,
          openRequestsFor(64),
          Optional.empty(),
          false);

  public UpstreamSettings {
    positive(connectTimeout, "connect-timeout");
    positive(firstByteTimeout, "first-byte-timeout");
    positive(idleTimeout, "idle-timeout");
    Objects.requireNonNull(retryBackoff, "retry-backoff");
    if (retryBackoff.isNegative()) {
      throw new IllegalArgumentException("retry-backoff must not be negative: " + retryBackoff);
    }
    if (retries < 0) throw new IllegalArgumentException("retries must be >= 0: " + retries);
    if (maxRedirects < 0) throw new IllegalArgumentException("max-redirects must be >= 0: " + maxRedirects);
    if (maxConnections < 1) throw new IllegalArgumentException("max-connections must be >= 1: " + maxConnections);
    if (maxOpenRequests < maxConnections || Integer.bitCount(maxOpenRequests) != 1) {
      throw new IllegalArgumentException(
          "max-open-requests must be a power of two >= max-connections (" + maxConnections + "): " + maxOpenRequests);
    }
    credential = credential == null ? Optional.empty() : credential;
  }

  /** Without the registry token flow. */
  public UpstreamSettings(Duration connectTimeout, Duration firstByteTimeout, Duration idleTimeout, int retries,
      Duration retryBackoff, int maxRedirects, int maxConnections, int maxOpenRequests,
      Optional<Credential> credential) {
    this(connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff, maxRedirects, maxConnections,
        maxOpenRequests, credential, false);
  }

  /** The pool queue that goes with {@code maxConnections}: the power of two >= 4 times it. */
  public static int openRequestsFor(int maxConnections) {
    // The pool fails (does not queue) requests beyond this, so distinct keys past it would get
    // 502s: keep the queue deep, at least 1024, and a power of two as Pekko requires.
    int wanted = Math.max(1024, Math.max(1, maxConnections) * 4);
    return Integer.highestOneBit(wanted - 1) << 1;
  }

  public UpstreamSettings withConnectTimeout(Duration d) {
    return new UpstreamSettings(d, firstByteTimeout, idleTimeout, retries, retryBackoff, maxRedirects, maxConnections, maxOpenRequests, credential, registryTokens);
  }

  public UpstreamSettings withFirstByteTimeout(Duration d) {
    return new UpstreamSettings(connectTimeout, d, idleTimeout, retries, retryBackoff, maxRedirects, maxConnections, maxOpenRequests, credential, registryTokens);
  }

  public UpstreamSettings withIdleTimeout(Duration d) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, d, retries, retryBackoff, maxRedirects, maxConnections, maxOpenRequests, credential, registryTokens);
  }

  public UpstreamSettings withRetries(int n, Duration backoff) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, idleTimeout, n, backoff, maxRedirects, maxConnections, maxOpenRequests, credential, registryTokens);
  }

  public UpstreamSettings withMaxRedirects(int n) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff, n, maxConnections, maxOpenRequests, credential, registryTokens);
  }

  /** Sets the pool size and its queue ({@link #openRequestsFor}). */
  public UpstreamSettings withMaxConnections(int n) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff, maxRedirects, n, openRequestsFor(n), credential, registryTokens);
  }

  public UpstreamSettings withCredential(Credential c) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff, maxRedirects, maxConnections, maxOpenRequests, Optional.of(c), registryTokens);
  }

  /** With the registry token flow on or off ({@code registryTokens}). */
  public UpstreamSettings withRegistryTokens(boolean on) {
    return new UpstreamSettings(connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff, maxRedirects, maxConnections, maxOpenRequests, credential, on);
  }

  private static void positive(Duration d, String name) {
    Objects.requireNonNull(d, name);
    if (d.isZero() || d.isNegative()) throw new IllegalArgumentException(name + " must be positive: " + d);
  }

  @Override
  public String toString() {
    return "UpstreamSettings[connect=" + connectTimeout + ", firstByte=" + firstByteTimeout + ", idle=" + idleTimeout
        + ", retries=" + retries + " after " + retryBackoff + ", maxRedirects=" + maxRedirects
        + ", maxConnections=" + maxConnections + ", maxOpenRequests=" + maxOpenRequests
        + ", credential=" + credential.map(Object::toString).orElse("none") + ", registryTokens=" + registryTokens + "]";
  }
}
