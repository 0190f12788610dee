package dev.corral.http.repo;

import dev.corral.core.key.ArtifactKey;
import dev.corral.registry.Lookup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.util.ByteString;

/** A {@link Lookup} over a map: {@code cached} reads the "store", {@code body} the "upstream" too. */
final class CachingLookup implements Lookup {
  final Map<ArtifactKey, ByteString> cached = new ConcurrentHashMap<>();
  final Map<ArtifactKey, ByteString> upstream = new ConcurrentHashMap<>();
  final List<ArtifactKey> bodyCalls = new ArrayList<>();

  CachingLookup cache(ArtifactKey key, String body) {
    cached.put(key, ByteString.fromString(body, StandardCharsets.UTF_8));
    return this;
  }

  CachingLookup upstream(ArtifactKey key, String body) {
    upstream.put(key, ByteString.fromString(body, StandardCharsets.UTF_8));
    return this;
  }

  @Override
  public synchronized CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
    bodyCalls.add(key);
    ByteString b = cached.get(key);
    if (b == null) {
      b = upstream.get(key);
      if (b != null) {
        cached.put(key, b);
      }
    }
    return CompletableFuture.completedFuture(Optional.ofNullable(b));
  }

  @Override
  public Optional<ByteString> cached(ArtifactKey key) {
    return Optional.ofNullable(cached.get(key));
  }
}
