package dev.corral.http.repo;

import dev.corral.core.ArtifactKey;
import java.util.List;
import java.util.Optional;

/**
 * One configured repository: how a request path of its type maps to an upstream URL and a key.
 * One implementation per registry type; {@link GenericRepository} is plain HTTP.
 */
public interface Repository {

  /** The configured name: the first path segment of its requests. */
  String name();

  /** Whether a segment may contain an encoded {@code /} (npm's {@code @scope%2fname}). */
  default boolean allowsEncodedSlash() {
    return false;
  }

  /**
   * The key of a request.
   *
   * @param segments the decoded path segments after the repository name
   * @param upstreamPath the same segments re-encoded for the upstream URL, starting with {@code /}
   * @param rawQuery the query string as the client sent it, if any
   * @return the key, or empty when this type has no artifact at that path
   */
  Optional<ArtifactKey> key(List<String> segments, String upstreamPath, Optional<String> rawQuery);
}
