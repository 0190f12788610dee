package dev.corral.registry;

import java.util.List;
import java.util.Optional;

/**
 * One client request to a repository, after Corral validated its path (no traversal, no
 * encodings the repository does not allow).
 *
 * @param segments the decoded path segments after the repository name
 * @param upstreamPath the same segments re-encoded for the upstream URL, starting with {@code /}
 * @param rawQuery the query string as the client sent it, if any
 * @param accept the client's {@code Accept} header, if any (an adapter maps it to one of its
 *     variants; it is never passed upstream as it came)
 * @param baseUrl the URL clients reach this repository at, without a trailing slash (for
 *     example {@code http://cache.example/npm}): from the configured public base URL, a trusted
 *     proxy's forwarded headers or the address the connection arrived at (never an untrusted
 *     client header). Used only for rewriting what is served, never for what is stored.
 */
public record RepoRequest(
    List<String> segments, String upstreamPath, Optional<String> rawQuery, Optional<String> accept, String baseUrl) {

  public RepoRequest {
    segments = List.copyOf(segments);
  }

  /** The path after the repository name as one string, segments joined with {@code /}. */
  public String path() {
    return String.join("/", segments);
  }
}
