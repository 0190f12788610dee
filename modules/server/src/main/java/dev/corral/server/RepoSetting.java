package dev.corral.server;

import java.util.Arrays;
import java.util.Optional;

/**
 * The keys allowed under {@code corral.repos.NAME}. Those marked {@code inRepoDefaults} may also
 * be set once for every repository under {@code corral.repo-defaults}, whose built-in values are
 * in {@code corral-defaults.conf}; the others there are refused as per-repository only. Any other
 * key is an error, so that a typo is not silently ignored.
 */
public enum RepoSetting {
  TYPE("type", false, null,
      "npm, maven, pypi, go, oci (container images), generic (plain HTTP) or group (one URL over other repositories)"),
  URL("url", false, null, "Upstream base URL: absolute http or https, with a host, no query or fragment (not for a group)"),
  MEMBERS("members", false, null,
      "group only: the repositories it serves, in priority order ([M1, M2]; --repo NAME=group:M1,M2),"
          + " all of one type, not oci, no group"),
  CONNECT_TIMEOUT("connect-timeout", true, null, "Time allowed to open a connection upstream"),
  FIRST_BYTE_TIMEOUT("first-byte-timeout", true, null,
      "Time allowed from sending the request to the response's status and headers"),
  IDLE_TIMEOUT("idle-timeout", true, null, "Longest pause allowed while a body streams in"),
  RETRIES("retries", true, null, "Further attempts after a failed one, inside the one fetch"),
  RETRY_BACKOFF("retry-backoff", true, null, "Pause before each retry"),
  MAX_REDIRECTS("max-redirects", true, null, "Redirects followed upstream"),
  MAX_CONNECTIONS("max-connections", true, null, "Open connections to the upstream, at most: 1 to 65536"),
  NEGATIVE_TTL("negative-ttl", true, null, "How long an upstream not-found is remembered"),
  METADATA_TTL("metadata-ttl", true, null,
      "How long cached mutable metadata (package indexes, maven-metadata.xml) is served without"
          + " revalidating it upstream (0s: revalidate on every request)"),
  MAX_AGE_UNUSED("max-age-unused", true, null,
      "Cleanup policy: keys of this repository not requested for this long are removed from each"
          + " node's store, beside the global size bound (at least 1s; 0s: never)"),
  MAX_STALE("max-stale", true, null,
      "How long past metadata-ttl a stale copy is still served at once (X-Cache: STALE) while it"
          + " revalidates or while the upstream fails; older copies wait for the upstream"),
  WAITER_BUDGET("waiter-budget", true, "2 x first-byte-timeout + 3s",
      "How long a waiter waits for a fetch's outcome to begin"),
  ON_BUDGET_EXHAUSTED("on-budget-exhausted", true, null,
      "\"504\": answer 504; \"bypass\": fetch directly, uncached (X-Cache: BYPASS)"),
  MAX_WAITERS("max-waiters", true, null,
      "Waiters on one artifact key on one node, at most (more get 503); those joining a copy from a peer"
          + " already streaming there are not counted"),
  MAX_ORPHAN_FETCHES("max-orphan-fetches", true, null,
      "Downloads kept running on a node after their last waiter or reader left, at most"),
  INLINE_LIMIT("inline-limit", true, null,
      "Bodies up to this size (at most 64MiB) are held in memory and answered only once complete and verified"),
  CREDENTIALS("credentials", false, null,
      "{ type = basic, username, password-env | password-file } or"
          + " { type = bearer, token-env | token-file }"),
  QUERY("query", false, null,
      "generic only: what of a request's query string goes upstream and into the key: keep (the"
          + " default), drop, or a list of the parameter names to keep"),
  FRESHNESS("freshness", false, null,
      "generic only (HOCON): rules by path, first match wins: [ { path = \"dists/**\", ttl = 5m },"
          + " { path = \"pool/**\", immutable = true } ]; a path no rule matches follows the upstream's"
          + " Cache-Control / Expires (immutable when it sends neither); see docs/operations.md"),
  CA_BUNDLE("ca-bundle", false, null,
      "PEM file of the CAs the upstream's certificate must chain to, instead of the JDK's"),
  CLIENT_CERT("client-cert", false, null,
      "PEM certificate chain presented when the upstream asks for a client certificate; with client-key"),
  CLIENT_KEY("client-key", false, null, "PEM private key of client-cert (PKCS#8, RSA or EC, unencrypted)"),
  SINGLE_NAME_NAMESPACE("single-name-namespace", false, null,
      "oci only: the namespace a one-part image name is asked upstream in (library for registries"
          + " that keep official images there: alpine is asked as library/alpine); none by default"),
  ROOT_MIRROR("root-mirror", false, null,
      "oci only: also serve this repository at /v2/<image>/... without its name, for mirror settings"
          + " that take no path (the Docker daemon's registry-mirrors); at most one repository"),
  SUMDB_URL("sumdb-url", false, null,
      "go only: a Go checksum database to proxy under /NAME/sumdb/HOST[:PORT]/ (else 404 there)"),
  ALLOWED_HOSTS("allowed-hosts", false, null,
      "Hosts besides the upstream's own that its requests may reach (redirect targets, npm tarball"
          + " and PyPI file hosts): HOST or HOST:PORT (no port: 80/443 only), never sent the"
          + " credential; everything else is refused (502)");

  private final String key;
  private final boolean inRepoDefaults;
  private final String computedDefault;
  private final String description;

  RepoSetting(String key, boolean inRepoDefaults, String computedDefault, String description) {
    this.key = key;
    this.inRepoDefaults = inRepoDefaults;
    this.computedDefault = computedDefault;
    this.description = description;
  }

  public String key() {
    return key;
  }

  /** Whether the key may appear under {@code corral.repo-defaults}. */
  public boolean inRepoDefaults() {
    return inRepoDefaults;
  }

  public String description() {
    return description;
  }

  /** The built-in default, from {@code corral-defaults.conf} or, if computed, how. */
  public Optional<String> defaultText() {
    if (!inRepoDefaults) {
      return Optional.empty();
    }
    return BuiltInDefaults.text("corral.repo-defaults." + key).or(() -> Optional.ofNullable(computedDefault));
  }

  static Optional<RepoSetting> byKey(String key) {
    return Arrays.stream(values()).filter(r -> r.key.equals(key)).findFirst();
  }
}
