package dev.corral.http.upstream;

import dev.corral.http.tls.UpstreamTls;
import java.util.Objects;

/**
 * A repository's upstream: its base URL, whose origin (scheme, host, port) is the only place its
 * credential is sent, its settings, and how its connections do TLS.
 */
public record RepoUpstream(String baseUrl, UpstreamSettings settings, UpstreamTls tls) {
  public RepoUpstream {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(tls, "tls");
  }

  /** With the JDK's trusted CAs and no client certificate. */
  public RepoUpstream(String baseUrl, UpstreamSettings settings) {
    this(baseUrl, settings, UpstreamTls.JDK_DEFAULTS);
  }
}
