package dev.corral.http.upstream;

import java.util.Objects;

/**
 * A repository's upstream: its base URL, whose origin (scheme, host, port) is the only place its
 * credential is sent, its settings, and the scope its requests are confined to.
 */
public record RepoUpstream(String baseUrl, UpstreamSettings settings, UpstreamScope scope) {
  public RepoUpstream {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(scope, "scope");
  }

  /** Confined to the base URL's origin and path, with no other host allowed. */
  public RepoUpstream(String baseUrl, UpstreamSettings settings) {
    this(baseUrl, settings, UpstreamScope.of(baseUrl));
  }
}
