package dev.corral.http.upstream;

import java.util.Objects;

/**
 * A repository's upstream: its base URL, whose origin (scheme, host, port) is the only place its
 * credential is sent, and its settings.
 */
public record RepoUpstream(String baseUrl, UpstreamSettings settings) {
  public RepoUpstream {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(settings, "settings");
  }
}
