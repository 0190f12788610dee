package dev.corral.server;

import dev.corral.cluster.ClusterSettings;
import dev.corral.http.ServeLimits;
import dev.corral.http.ConnectionLimits;
import dev.corral.http.TrustedProxies;
import dev.corral.http.auth.ClientAuth;
import dev.corral.http.tls.ServerTls;
import dev.corral.http.upstream.EgressProxy;
import com.typesafe.config.Config;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A node's validated, immutable settings, merged from (highest precedence first) the command
 * line, the environment ({@code CORRAL_...}), the {@code --config} HOCON file and the built-in
 * {@code corral-defaults.conf}. The flags, paths and variables are listed in {@link Setting}
 * and {@link RepoSetting}.
 *
 * @param connections the front door's connection cap and request-head timeouts
 * @param maxSizeBytes the most the store may hold
 * @param memoryCacheBytes heap for the most used small artifacts (0: none)
 * @param adminToken the admin token file's contents, trimmed; never shown by {@link #toString()}
 * @param clientAuth who may read which repository (open to all without a tokens file)
 * @param publicBaseUrl how clients reach this node, when set
 * @param trustedProxies proxies whose forwarded headers are believed (none by default)
 * @param repos sorted by name; may be empty (then {@link #warnings()} says so)
 * @param cluster how the node joins its cluster and where its management endpoints listen
 * @param journal the shared database of the key records; empty: embedded H2 under the data dir
 * @param raw the merged HOCON (corral section plus anything else the file holds, such as
 *     {@code pekko}), with substitutions resolved where they could be. Put it in front of the
 *     Pekko reference configuration: {@code raw.withFallback(ConfigFactory.load())}.
 * @param warnings problems that do not stop the start, for the caller to log
 * @param serveLimits the metadata memory and the per-client miss rate limit
 * @param tls the client port's certificate and key (HTTPS), loaded; empty: plain HTTP
 * @param tlsHttp2 with TLS, whether HTTP/2 is offered (else HTTP/1.1 only, with every connection defence)
 * @param upstreamProxy the HTTP proxy upstream connections tunnel through, if any
 * @param logs the application log's format and the access log's destination and format
 */
public record CorralSettings(
    String httpHost,
    int httpPort,
    ConnectionLimits connections,
    Path dataDir,
    long maxSizeBytes,
    long memoryCacheBytes,
    Optional<String> adminToken,
    ClientAuth clientAuth,
    Optional<URI> publicBaseUrl,
    TrustedProxies trustedProxies,
    Duration drainTimeout,
    Duration tombstoneTtl,
    List<RepoSettings> repos,
    ClusterSettings cluster,
    Optional<JournalSettings> journal,
    Config raw,
    List<String> warnings,
    ServeLimits serveLimits,
    Optional<ServerTls> tls,
    boolean tlsHttp2,
    Optional<EgressProxy> upstreamProxy,
    LogSettings logs) {

  public CorralSettings {
    Objects.requireNonNull(httpHost, "httpHost");
    Objects.requireNonNull(connections, "connections");
    Objects.requireNonNull(dataDir, "dataDir");
    Objects.requireNonNull(adminToken, "adminToken");
    Objects.requireNonNull(clientAuth, "clientAuth");
    Objects.requireNonNull(publicBaseUrl, "publicBaseUrl");
    Objects.requireNonNull(trustedProxies, "trustedProxies");
    Objects.requireNonNull(drainTimeout, "drainTimeout");
    Objects.requireNonNull(tombstoneTtl, "tombstoneTtl");
    Objects.requireNonNull(cluster, "cluster");
    Objects.requireNonNull(journal, "journal");
    Objects.requireNonNull(raw, "raw");
    Objects.requireNonNull(serveLimits, "serveLimits");
    tls = tls == null ? Optional.empty() : tls;
    upstreamProxy = upstreamProxy == null ? Optional.empty() : upstreamProxy;
    logs = logs == null ? LogSettings.plain() : logs;
    repos = List.copyOf(repos);
    warnings = List.copyOf(warnings);
  }

  /**
   * Reads and validates the settings.
   *
   * @param args the options of {@code corral serve}, without the subcommand
   * @param env the environment, passed in so that loading is a pure function of its inputs
   *     (also used for {@code ${?VAR}} substitutions in the file and for credentials)
   * @throws SettingsException naming the first bad setting as the user wrote it
   */
  public static CorralSettings load(String[] args, Map<String, String> env) {
    return SettingsReader.read(SettingSources.read(args, env), env);
  }

  /** The repository called {@code name}, if configured. */
  public Optional<RepoSettings> repo(String name) {
    return repos.stream().filter(r -> r.name().equals(name)).findFirst();
  }

  /** Without the admin token and without the raw configuration. */
  @Override
  public String toString() {
    return "CorralSettings[httpHost=" + httpHost
        + ", httpPort=" + httpPort
        + ", connections=" + connections
        + ", dataDir=" + dataDir
        + ", maxSizeBytes=" + maxSizeBytes
        + ", adminToken=" + (adminToken.isPresent() ? "***" : "none")
        + ", clientAuth=" + clientAuth
        + ", publicBaseUrl=" + publicBaseUrl.map(URI::toString).orElse("none")
        + ", trustedProxies=" + trustedProxies
        + ", drainTimeout=" + drainTimeout
        + ", tombstoneTtl=" + tombstoneTtl
        + ", repos=" + repos
        + ", cluster=" + cluster
        + ", journal=" + journal.map(JournalSettings::toString).orElse("embedded H2")
        + ", serveLimits=" + serveLimits
        + ", tls=" + tls.map(t -> tlsHttp2 ? "on (HTTP/2, HTTP/1.1)" : "on (HTTP/1.1)").orElse("off")
        + ", upstreamProxy=" + upstreamProxy.map(EgressProxy::toString).orElse("none")
        + ", logs=" + logs
        + "]";
  }
}
