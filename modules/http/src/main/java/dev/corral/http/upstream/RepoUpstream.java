package dev.corral.http.upstream;

import dev.corral.http.tls.UpstreamTls;
import java.util.Objects;

/**
 * A repository's upstream: its base URL, whose origin (scheme, host, port) is the only place its
 * credential is sent, its settings, the scope its requests are confined to, and how its
 * connections do TLS.
 */
public record RepoUpstream(String baseUrl, UpstreamSettings settings, UpstreamScope scope, UpstreamTls tls) {
  public RepoUpstream {
    Objects.requireNonNull(baseUrl, "baseUrl");
    Objects.requireNonNull(settings, "settings");
    Objects.requireNonNull(scope, "scope");
    Objects.requireNonNull(tls, "tls");
  }

  /** Confined to the base URL's origin and path, with no other host allowed, and the JDK's TLS defaults. */
  public RepoUpstream(String baseUrl, UpstreamSettings settings) {
    this(baseUrl, settings, UpstreamScope.of(baseUrl), UpstreamTls.JDK_DEFAULTS);
  }

  /** With the JDK's trusted CAs and no client certificate. */
  public RepoUpstream(String baseUrl, UpstreamSettings settings, UpstreamScope scope) {
    this(baseUrl, settings, scope, UpstreamTls.JDK_DEFAULTS);
  }

  /** Confined to the base URL's origin and path, with no other host allowed. */
  public RepoUpstream(String baseUrl, UpstreamSettings settings, UpstreamTls tls) {
    this(baseUrl, settings, UpstreamScope.of(baseUrl), tls);
  }
}
