package dev.corral.server;

import dev.corral.http.tls.UpstreamTls;
import dev.corral.http.upstream.AllowedHost;
import dev.corral.http.upstream.Credential;
import dev.corral.registry.generic.FreshnessRules;
import dev.corral.registry.generic.QueryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One repository's validated settings ({@code corral.repos.NAME}, falling back to
 * {@code corral.repo-defaults}). Sizes are in bytes. {@link #toString()} never shows the
 * credential's secret.
 *
 * @param name [a-z0-9][a-z0-9._-]*
 * @param type one of {@link #KNOWN_TYPES}; which ones are served is the server's decision
 * @param url absolute http or https URL with a host and no user info
 * @param waiterBudget as configured, or 2 x firstByteTimeout + 3 s
 * @param maxOrphanFetches fetches that keep running with no waiter left, at most
 * @param inlineLimitBytes bodies up to this size are answered only once complete
 * @param metadataTtl how long a stored copy of mutable metadata is fresh
 * @param maxStale how long past its TTL a stale copy may still be served at once
 * @param sumdbUrl go repositories: the checksum database proxied under {@code sumdb/}, if any
 * @param query generic repositories: what of a request's query goes upstream and into the key
 * @param allowedHosts hosts besides the upstream's own origin that its requests may reach
 *     (redirect targets, tarball and file hosts); never with the credential
 * @param tls the CAs its upstream must chain to and the client certificate it presents
 * @param singleNameNamespace oci repositories: the namespace a one-component image name is asked
 *     upstream in ({@code library} for registries that keep official images there), if any
 * @param rootMirror oci repositories: also served at {@code /v2/<image>/...}, without its name (at
 *     most one repository), for clients whose mirror setting takes no path
 * @param maxAgeUnused keys not requested for this long are removed ({@link UnusedCleanup}); zero: never
 * @param members a group: the repositories it serves, in priority order (its {@code url} is
 *     empty); empty for every other type
 * @param freshness generic repositories: how long a path's stored copy is fresh, by path pattern
 *     (a path no rule matches follows the upstream's Cache-Control / Expires)
 */
public record RepoSettings(
    String name,
    String type,
    String url,
    Duration connectTimeout,
    Duration firstByteTimeout,
    Duration idleTimeout,
    int retries,
    Duration retryBackoff,
    int maxRedirects,
    int maxConnections,
    Duration negativeTtl,
    Duration waiterBudget,
    OnBudgetExhausted onBudgetExhausted,
    int maxWaiters,
    int maxOrphanFetches,
    long inlineLimitBytes,
    Optional<Credential> credential,
    Duration metadataTtl,
    Duration maxStale,
    Optional<String> sumdbUrl,
    QueryPolicy query,
    List<AllowedHost> allowedHosts,
    UpstreamTls tls,
    Optional<String> singleNameNamespace,
    boolean rootMirror,
    Duration maxAgeUnused,
    List<String> members,
    FreshnessRules freshness) {

  /** With no freshness rules (every type but generic has none). */
  public RepoSettings(String name, String type, String url, Duration connectTimeout,
      Duration firstByteTimeout, Duration idleTimeout, int retries, Duration retryBackoff,
      int maxRedirects, int maxConnections, Duration negativeTtl, Duration waiterBudget,
      OnBudgetExhausted onBudgetExhausted, int maxWaiters, int maxOrphanFetches,
      long inlineLimitBytes, Optional<Credential> credential, Duration metadataTtl, Duration maxStale,
      Optional<String> sumdbUrl, QueryPolicy query, List<AllowedHost> allowedHosts, UpstreamTls tls,
      Optional<String> singleNameNamespace, boolean rootMirror) {
    this(name, type, url, connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff,
        maxRedirects, maxConnections, negativeTtl, waiterBudget, onBudgetExhausted, maxWaiters,
        maxOrphanFetches, inlineLimitBytes, credential, metadataTtl, maxStale, sumdbUrl, query, allowedHosts, tls,
        singleNameNamespace, rootMirror, Duration.ZERO, List.of(), FreshnessRules.NONE);
  }

  /** With no single-name namespace (every type but oci has none). */
  public RepoSettings(String name, String type, String url, Duration connectTimeout,
      Duration firstByteTimeout, Duration idleTimeout, int retries, Duration retryBackoff,
      int maxRedirects, int maxConnections, Duration negativeTtl, Duration waiterBudget,
      OnBudgetExhausted onBudgetExhausted, int maxWaiters, int maxOrphanFetches,
      long inlineLimitBytes, Optional<Credential> credential, Duration metadataTtl, Duration maxStale,
      Optional<String> sumdbUrl, QueryPolicy query, List<AllowedHost> allowedHosts, UpstreamTls tls) {
    this(name, type, url, connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff,
        maxRedirects, maxConnections, negativeTtl, waiterBudget, onBudgetExhausted, maxWaiters,
        maxOrphanFetches, inlineLimitBytes, credential, metadataTtl, maxStale, sumdbUrl, query, allowedHosts, tls,
        Optional.empty(), false, Duration.ZERO, List.of(), FreshnessRules.NONE);
  }

  /** With no allowed hosts (only the upstream's own origin is reached), the JDK's CAs and no client certificate. */
  public RepoSettings(String name, String type, String url, Duration connectTimeout,
      Duration firstByteTimeout, Duration idleTimeout, int retries, Duration retryBackoff,
      int maxRedirects, int maxConnections, Duration negativeTtl, Duration waiterBudget,
      OnBudgetExhausted onBudgetExhausted, int maxWaiters, int maxOrphanFetches,
      long inlineLimitBytes, Optional<Credential> credential, Duration metadataTtl, Duration maxStale,
      Optional<String> sumdbUrl, QueryPolicy query) {
    this(name, type, url, connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff,
        maxRedirects, maxConnections, negativeTtl, waiterBudget, onBudgetExhausted, maxWaiters,
        maxOrphanFetches, inlineLimitBytes, credential, metadataTtl, maxStale, sumdbUrl, query, List.of(),
        UpstreamTls.JDK_DEFAULTS);
  }

  /** With the query kept as sent (the default for every type). */
  public RepoSettings(String name, String type, String url, Duration connectTimeout,
      Duration firstByteTimeout, Duration idleTimeout, int retries, Duration retryBackoff,
      int maxRedirects, int maxConnections, Duration negativeTtl, Duration waiterBudget,
      OnBudgetExhausted onBudgetExhausted, int maxWaiters, int maxOrphanFetches,
      long inlineLimitBytes, Optional<Credential> credential, Duration metadataTtl, Duration maxStale,
      Optional<String> sumdbUrl) {
    this(name, type, url, connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff,
        maxRedirects, maxConnections, negativeTtl, waiterBudget, onBudgetExhausted, maxWaiters,
        maxOrphanFetches, inlineLimitBytes, credential, metadataTtl, maxStale, sumdbUrl, QueryPolicy.keep());
  }

  /** With the core's default metadata TTL and max-stale. */
  public RepoSettings(String name, String type, String url, Duration connectTimeout,
      Duration firstByteTimeout, Duration idleTimeout, int retries, Duration retryBackoff,
      int maxRedirects, int maxConnections, Duration negativeTtl, Duration waiterBudget,
      OnBudgetExhausted onBudgetExhausted, int maxWaiters, int maxOrphanFetches,
      long inlineLimitBytes, Optional<Credential> credential) {
    this(name, type, url, connectTimeout, firstByteTimeout, idleTimeout, retries, retryBackoff,
        maxRedirects, maxConnections, negativeTtl, waiterBudget, onBudgetExhausted, maxWaiters,
        maxOrphanFetches, inlineLimitBytes, credential,
        dev.corral.core.fetch.FetchPolicy.DEFAULT_METADATA_TTL,
        dev.corral.core.fetch.FetchPolicy.DEFAULT_MAX_STALE, Optional.empty());
  }

  /** Repository types the parser accepts. */
  public static final java.util.List<String> KNOWN_TYPES =
      java.util.List.of("generic", "npm", "maven", "pypi", "go", "oci", "group");

  /** The type of a group (virtual) repository: one URL over other repositories ({@link #members}). */
  public static final String GROUP = "group";

  /** Whether this is a group of other repositories. */
  public boolean isGroup() {
    return type.equals(GROUP);
  }

  /** What a waiter gets when its budget runs out before the fetch's outcome begins. */
  public enum OnBudgetExhausted {
    /** Answer 504 Gateway Timeout. */
    GATEWAY_TIMEOUT("504"),
    /** Make the waiter's own direct, uncached fetch ({@code X-Cache: BYPASS}). */
    BYPASS("bypass");

    private final String configValue;

    OnBudgetExhausted(String configValue) {
      this.configValue = configValue;
    }

    /** As written in the configuration: {@code "504"} or {@code "bypass"}. */
    public String configValue() {
      return configValue;
    }

    static Optional<OnBudgetExhausted> parse(String text) {
      for (OnBudgetExhausted v : values()) {
        if (v.configValue.equalsIgnoreCase(text.trim())) {
          return Optional.of(v);
        }
      }
      return Optional.empty();
    }
  }

  /** The waiter budget when none is configured: SEMANTICS W3's, from the core. */
  public static Duration defaultWaiterBudget(Duration firstByteTimeout) {
    return dev.corral.core.fetch.FetchPolicy.defaultBudget(firstByteTimeout);
  }

  public RepoSettings {
    Objects.requireNonNull(name, "name");
    tls = tls == null ? UpstreamTls.JDK_DEFAULTS : tls;
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(connectTimeout, "connectTimeout");
    Objects.requireNonNull(firstByteTimeout, "firstByteTimeout");
    Objects.requireNonNull(idleTimeout, "idleTimeout");
    Objects.requireNonNull(retryBackoff, "retryBackoff");
    Objects.requireNonNull(negativeTtl, "negativeTtl");
    Objects.requireNonNull(waiterBudget, "waiterBudget");
    Objects.requireNonNull(onBudgetExhausted, "onBudgetExhausted");
    Objects.requireNonNull(credential, "credential");
    Objects.requireNonNull(metadataTtl, "metadataTtl");
    Objects.requireNonNull(maxStale, "maxStale");
    Objects.requireNonNull(sumdbUrl, "sumdbUrl");
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(tls, "tls");
    Objects.requireNonNull(singleNameNamespace, "singleNameNamespace");
    freshness = freshness == null ? FreshnessRules.NONE : freshness;
    allowedHosts = List.copyOf(allowedHosts);
    members = List.copyOf(members);
  }
}
