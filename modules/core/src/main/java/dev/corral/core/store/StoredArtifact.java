package dev.corral.core.store;

import dev.corral.core.CborSerializable;
import dev.corral.core.upstream.Header;
import java.util.List;

/**
 * What one node's store holds for one key: a pointer to a content-addressed blob plus the
 * response metadata needed to serve it without asking the upstream.
 *
 * @param keyId {@link dev.corral.core.key.ArtifactKey#id()}
 * @param key {@link dev.corral.core.key.ArtifactKey#canonical()}, kept so the index can be rebuilt
 * @param sha256 lower-case hex SHA-256 of the bytes (the blob's name)
 * @param size exact byte count
 * @param headers the upstream response headers worth replaying (Content-Type, ETag,
 *     Last-Modified, Cache-Control ...)
 * @param fetchedAtMillis when the bytes (or their last revalidation) came from the upstream
 */
public record StoredArtifact(
    String keyId, String key, String sha256, long size, List<Header> headers, long fetchedAtMillis)
    implements CborSerializable {

  public StoredArtifact {
    headers = List.copyOf(headers);
  }
}
