package dev.corral.registry;

import dev.corral.core.key.ArtifactKey;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.pekko.util.ByteString;

/** A {@link Lookup} over fixed bodies by URL, recording what was read; failing URLs fail with 502. */
public final class MapLookup implements Lookup {
  public final Map<String, ByteString> bodies = new ConcurrentHashMap<>();
  public final Map<String, ByteString> cachedBodies = new ConcurrentHashMap<>();
  public final Map<String, Boolean> failing = new ConcurrentHashMap<>();
  /** Each body read: the key and whether it was read as mutable. */
  public final List<Map.Entry<ArtifactKey, Boolean>> reads = new CopyOnWriteArrayList<>();

  public MapLookup body(String url, String body) {
    bodies.put(url, ByteString.fromString(body));
    return this;
  }

  @Override
  public CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
    reads.add(Map.entry(key, mutable));
    if (failing.containsKey(key.url())) {
      return CompletableFuture.failedFuture(new LookupFailed(502, "upstream down"));
    }
    return CompletableFuture.completedFuture(Optional.ofNullable(bodies.get(key.url())));
  }

  @Override
  public Optional<ByteString> cached(ArtifactKey key) {
    return Optional.ofNullable(cachedBodies.get(key.canonical()));
  }
}
