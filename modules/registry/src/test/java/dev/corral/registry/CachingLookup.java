package dev.corral.registry;

import dev.corral.core.key.ArtifactKey;
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
public final class CachingLookup implements Lookup {
  public final Map<ArtifactKey, ByteString> cached = new ConcurrentHashMap<>();
  public final Map<ArtifactKey, ByteString> upstream = new ConcurrentHashMap<>();
  public final List<ArtifactKey> bodyCalls = new ArrayList<>();

  public CachingLookup cache(ArtifactKey key, String body) {
    cached.put(key, ByteString.fromString(body, StandardCharsets.UTF_8));
    return this;
  }

  public CachingLookup upstream(ArtifactKey key, String body) {
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
