package dev.corral.http;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Ticker;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * The per-client miss rate limit ({@code --miss-rate-limit}): one token bucket per client
 * address, holding up to {@code burst} tokens and refilled at the configured rate; a request that
 * would go upstream (a miss) takes a token, and one that finds none is refused. Time is the
 * node's ticker, so tests advance it. The table is bounded (the least recently used clients are
 * forgotten, which only ever gives them a full bucket again) and entries idle long enough to have
 * refilled are dropped.
 */
final class MissRates {
  static final long MAX_CLIENTS = 100_000;

  private final ServeLimits.MissRate rate;
  private final Ticker ticker;
  private final Cache<String, Bucket> buckets;

  MissRates(ServeLimits.MissRate rate, Ticker ticker) {
    this.rate = rate;
    this.ticker = ticker;
    double refillSeconds = rate.burst() / rate.perSecond();
    this.buckets = Caffeine.newBuilder()
        .maximumSize(MAX_CLIENTS)
        .expireAfterAccess(Duration.ofNanos((long) Math.min(Long.MAX_VALUE / 2, refillSeconds * 1e9) + 1))
        .ticker(ticker)
        .build();
  }

  /**
   * Takes one token for the client.
   *
   * @return empty when the miss may go upstream; else the whole seconds until a token is back
   *     (for {@code Retry-After}, at least 1)
   */
  OptionalLong take(String client) {
    return buckets.get(client, c -> new Bucket(rate.burst(), ticker.read())).take(rate, ticker.read());
  }

  /** Clients with a bucket now (for tests). */
  long clients() {
    buckets.cleanUp();
    return buckets.estimatedSize();
  }

  private static final class Bucket {
    private double tokens;
    private long at;

    Bucket(double tokens, long at) {
      this.tokens = tokens;
      this.at = at;
    }

    synchronized OptionalLong take(ServeLimits.MissRate rate, long now) {
      if (now > at) {
        tokens = Math.min(rate.burst(), tokens + (now - at) / 1e9 * rate.perSecond());
        at = now;
      }
      if (tokens >= 1) {
        tokens -= 1;
        return OptionalLong.empty();
      }
      return OptionalLong.of(Math.max(1, (long) Math.ceil((1 - tokens) / rate.perSecond())));
    }
  }
}
