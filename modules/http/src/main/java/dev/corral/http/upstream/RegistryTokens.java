package dev.corral.http.upstream;

import com.github.benmanes.caffeine.cache.AsyncCache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Ticker;
import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

/**
 * One repository's registry tokens, by realm, service and scopes: each fetched once however many
 * requests need it at once (they share one future), kept until {@link RegistryToken#expiresAtNanos}
 * on the injected ticker, at most {@link #MAX_SCOPES} of them (the least used go first). A failed
 * fetch is not kept: the next request asks again.
 *
 * <p>Tokens are per repository, never shared between repositories: two repositories with
 * different credentials may name the same realm.
 *
 * <p>A request can carry a token before any challenge ({@link #cachedFor}): the last challenge's
 * realm and service with the scope its path needs ({@link #pullScopes}), so only the first request
 * of a scope meets a 401.
 */
final class RegistryTokens {
  static final int MAX_SCOPES = 1024;

  /** What a token is for. */
  record Key(URI realm, Optional<String> service, List<String> scopes) {
    static Key of(BearerChallenge challenge) {
      return new Key(challenge.realm(), challenge.service(), challenge.scopes());
    }
  }

  /** A token one request sends, and the cache's future that gave it (to refresh that very one). */
  record Grant(Key key, CompletableFuture<RegistryToken> source, RegistryToken token) {}

  private final AsyncCache<Key, RegistryToken> tokens;
  private final AtomicReference<BearerChallenge> lastChallenge = new AtomicReference<>();

  RegistryTokens(Ticker ticker) {
    this.tokens = Caffeine.newBuilder()
        .ticker(ticker)
        .maximumSize(MAX_SCOPES)
        .expireAfter(new Expiry<Key, RegistryToken>() {
          @Override
          public long expireAfterCreate(Key key, RegistryToken token, long now) {
            return Math.max(0, token.expiresAtNanos() - now);
          }

          @Override
          public long expireAfterUpdate(Key key, RegistryToken token, long now, long current) {
            return Math.max(0, token.expiresAtNanos() - now);
          }

          @Override
          public long expireAfterRead(Key key, RegistryToken token, long now, long current) {
            return current;
          }
        })
        .buildAsync();
  }

  /**
   * The token to send with a first request for {@code url}, if one is kept for the scope its path
   * needs under the last challenge's realm; a fetch of it in progress is waited for (one that
   * fails gives none).
   */
  CompletionStage<Optional<Grant>> cachedFor(URI url) {
    BearerChallenge last = lastChallenge.get();
    Optional<List<String>> scopes = pullScopes(url.getRawPath());
    if (last == null || scopes.isEmpty()) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    Key key = new Key(last.realm(), last.service(), scopes.get());
    CompletableFuture<RegistryToken> kept = tokens.getIfPresent(key);
    if (kept == null) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return kept.handle((token, error) -> error == null ? Optional.of(new Grant(key, kept, token)) : Optional.empty());
  }

  /**
   * The token that answers {@code challenge}: the kept one, or one fetched by {@code fetch} (once
   * for all who ask at the same time). When {@code refused} is the kept token for this challenge
   * (the upstream answered 401 to it), it is dropped first and a new one fetched: however many
   * requests meet that 401, one of them drops it and they all share the one new fetch.
   */
  CompletionStage<Grant> answer(BearerChallenge challenge, Optional<Grant> refused,
      Function<BearerChallenge, CompletionStage<RegistryToken>> fetch) {
    lastChallenge.set(challenge);
    Key key = Key.of(challenge);
    refused.filter(r -> r.key().equals(key)).ifPresent(this::forget);
    CompletableFuture<RegistryToken> source = tokens.get(key, (k, executor) -> fetch.apply(challenge).toCompletableFuture());
    return source.thenApply(token -> new Grant(key, source, token));
  }

  /** Drops this grant's token if it is still the one kept for its key (the upstream refused it). */
  void forget(Grant refused) {
    tokens.asMap().remove(refused.key(), refused.source());
  }

  /**
   * The scope a request for this path needs on an OCI Distribution upstream: {@code
   * repository:NAME:pull} for {@code .../v2/NAME/manifests/REF}, {@code .../v2/NAME/blobs/DIGEST}
   * and {@code .../v2/NAME/tags/list}; no scope for the API root {@code .../v2/}; empty for any
   * other path (no token is sent before its challenge).
   */
  static Optional<List<String>> pullScopes(String rawPath) {
    if (rawPath == null) return Optional.empty();
    int v2 = rawPath.indexOf("/v2/");
    if (v2 < 0) return Optional.empty();
    String rest = rawPath.substring(v2 + "/v2/".length());
    if (rest.isEmpty()) return Optional.of(List.of());
    // A reference, digest or "list" has no '/', so the last marker ends the name.
    int end = Math.max(rest.lastIndexOf("/manifests/"), Math.max(rest.lastIndexOf("/blobs/"), rest.lastIndexOf("/tags/")));
    if (end <= 0) return Optional.empty();
    return Optional.of(List.of("repository:" + rest.substring(0, end) + ":pull"));
  }
}
