package dev.corral.server;

import java.util.Arrays;
import java.util.Optional;

/**
 * The node-wide settings: the one table that drives the command-line parser, the environment
 * mapping, the {@code --help} text and the README table. Each setting has a flag, an
 * environment variable and (except {@link #CONFIG}) a HOCON path; defaults live in
 * {@code corral-defaults.conf} and are read from there, so they are written down exactly once.
 * Per-repository settings are in {@link RepoSetting}.
 *
 * <p>Precedence: command line, then environment, then the {@code --config} file, then the
 * built-in defaults.
 */
public enum Setting {
  CONFIG("--config", null, "CORRAL_CONFIG", "FILE",
      "HOCON file with a corral { ... } section (Pekko settings may sit beside it)"),
  HTTP_HOST("--http-host", "corral.http.host", "CORRAL_HTTP_HOST", "HOST",
      "Address the HTTP server binds to"),
  HTTP_PORT("--http-port", "corral.http.port", "CORRAL_HTTP_PORT", "PORT",
      "TCP port of the HTTP server (0 picks a free port)"),
  MAX_CONNECTIONS("--max-connections", "corral.http.max-connections", "CORRAL_MAX_CONNECTIONS", "N",
      "Client connections held at once; more wait in the kernel's accept backlog until one ends"),
  HEADER_READ_TIMEOUT("--header-read-timeout", "corral.http.header-read-timeout", "CORRAL_HEADER_READ_TIMEOUT",
      "DURATION", "Time a new connection has to send its first complete request head; then it is closed"),
  IDLE_TIMEOUT("--idle-timeout", "corral.http.idle-timeout", "CORRAL_IDLE_TIMEOUT", "DURATION",
      "Time a client connection may sit between requests, and the most a later request head may take"),
  TLS_CERT("--tls-cert", "corral.http.tls-cert", "CORRAL_TLS_CERT", "FILE",
      "PEM certificate chain for HTTPS on the HTTP port (HTTP/2 by ALPN, and HTTP/1.1); with --tls-key."
          + " Re-read when it changes"),
  TLS_KEY("--tls-key", "corral.http.tls-key", "CORRAL_TLS_KEY", "FILE",
      "PEM private key of --tls-cert (PKCS#8, RSA or EC, unencrypted); re-read when it changes"),
  TLS_HTTP2("--tls-http2", "corral.http.tls-http2", "CORRAL_TLS_HTTP2", "on/off",
      "With --tls-cert: offer HTTP/2 by ALPN beside HTTP/1.1 (on), or HTTP/1.1 only, bound through Pekko's"
          + " public API alone (off)"),
  UPSTREAM_PROXY("--upstream-proxy", "corral.upstream-proxy", "CORRAL_UPSTREAM_PROXY", "URL",
      "HTTP proxy (http://HOST:PORT) that upstream connections tunnel through with CONNECT; never used"
          + " between the cluster's nodes"),
  UPSTREAM_NO_PROXY("--upstream-no-proxy", "corral.upstream-no-proxy", "CORRAL_UPSTREAM_NO_PROXY",
      "HOST[,HOST...]", "Upstream hosts reached directly despite --upstream-proxy; each matches its"
          + " subdomains too, * matches all"),
  DATA_DIR("--data-dir", "corral.data-dir", "CORRAL_DATA_DIR", "DIR",
      "Directory holding the cached artifacts"),
  MAX_SIZE("--max-size", "corral.max-size", "CORRAL_MAX_SIZE", "SIZE",
      "Most the store may hold, at least 1MiB: bytes, or with KiB, MiB, GiB, TiB"),
  MEMORY_CACHE_SIZE("--memory-cache-size", "corral.memory-cache-size", "CORRAL_MEMORY_CACHE_SIZE", "SIZE",
      "Heap kept for the most used small artifacts (up to 1 MiB each), served without disk reads"),
  REPO("--repo", "corral.repos", "CORRAL_REPOS", "NAME=TYPE:URL",
      "A repository to cache; repeat the flag for more. TYPE: npm, maven, pypi, go, oci or"
          + " generic (oci is served under /v2/NAME/); NAME=group:M1,M2 serves repositories M1, M2 (of one"
          + " type, in that priority) at one URL. In the environment a comma- or space-separated list. In HOCON"
          + " corral.repos.NAME { type, url, ... } or { type = group, members = [M1, M2] }"),
  METADATA_MEMORY("--metadata-memory", "corral.metadata-memory", "CORRAL_METADATA_MEMORY", "SIZE",
      "Heap for metadata read whole at once to be rewritten or looked up (as much again keeps rewritten"
          + " documents and gzip forms); auto: a quarter of the heap, at least 16 MiB. A request finding no"
          + " room waits briefly, then gets 503 with Retry-After"),
  MISS_RATE_LIMIT("--miss-rate-limit", "corral.miss-rate-limit", "CORRAL_MISS_RATE_LIMIT", "RATE",
      "Requests that would go upstream (misses) per client address: N/s, N/m or N/h, or off; more get 429"
          + " with Retry-After"),
  MISS_RATE_BURST("--miss-rate-burst", "corral.miss-rate-burst", "CORRAL_MISS_RATE_BURST", "N",
      "Misses one client address may send at once before --miss-rate-limit slows it (default: the rate's N)"),
  ADMIN_TOKEN_FILE("--admin-token-file", "corral.admin-token-file", "CORRAL_ADMIN_TOKEN_FILE",
      "FILE", "File holding the admin API token (read at start-up, trimmed)"),
  TOKENS_FILE("--tokens-file", "corral.tokens-file", "CORRAL_TOKENS_FILE", "FILE",
      "Client credentials, one a line: NAME SHA256HEX-OF-TOKEN [REPO,REPO...]. Once set, every"
          + " repository needs a token (Bearer, or the Basic password) except --anonymous-repos;"
          + " re-read when it changes"),
  ANONYMOUS_REPOS("--anonymous-repos", "corral.anonymous-repos", "CORRAL_ANONYMOUS_REPOS", "REPO[,REPO...]",
      "Repositories anyone may read without a token when --tokens-file is set"),
  PUBLIC_BASE_URL("--public-base-url", "corral.public-base-url", "CORRAL_PUBLIC_BASE_URL", "URL",
      "URL clients use to reach this node, when it differs from the bind address"),
  TRUSTED_PROXIES("--trusted-proxies", "corral.trusted-proxies", "CORRAL_TRUSTED_PROXIES", "CIDR[,CIDR...]",
      "Proxies whose X-Forwarded-Host/-Proto are believed when no public base URL is set; their last"
          + " X-Forwarded-For address is the client's for --miss-rate-limit"),
  DRAIN_TIMEOUT("--drain-timeout", "corral.drain-timeout", "CORRAL_DRAIN_TIMEOUT", "DURATION",
      "How long a graceful stop lets in-flight fetches finish"),
  TOMBSTONE_TTL("--tombstone-ttl", "corral.tombstone-ttl", "CORRAL_TOMBSTONE_TTL", "DURATION",
      "How long a cancel that arrived before its registration is remembered"),
  CLUSTER_HOST("--cluster-host", "corral.cluster.host", "CORRAL_CLUSTER_HOST", "HOST",
      "Host name or address other nodes reach this node's cluster port at (Artery canonical host)"),
  CLUSTER_PORT("--cluster-port", "corral.cluster.port", "CORRAL_CLUSTER_PORT", "PORT",
      "TCP port of the cluster transport (Artery); 0 picks a free port"),
  SEED_NODES("--seed-nodes", "corral.cluster.seed-nodes", "CORRAL_SEED_NODES", "HOST:PORT[,...]",
      "Cluster ports of the nodes to join, comma-separated (the same list on every node). Without"
          + " seed nodes or discovery the node forms a cluster of its own"),
  DISCOVERY("--discovery", "corral.cluster.discovery", "CORRAL_DISCOVERY", "METHOD",
      "Cluster Bootstrap instead of seed nodes: none, config (contact points listed in"
          + " pekko.discovery.config.services.corral) or kubernetes-api (pods labelled app=corral)"),
  CLUSTER_TLS_DIR("--cluster-tls-dir", "corral.cluster.tls-dir", "CORRAL_CLUSTER_TLS_DIR", "DIR",
      "Directory with ca.crt, tls.crt, tls.key (PEM, RSA key; the layout cert-manager writes; corral tls"
          + " init makes one): the cluster port is TLS and the peer port HTTPS, both requiring a certificate"
          + " from that CA; re-read within a minute when they change"),
  CLUSTER_INSECURE("--cluster-insecure", "corral.cluster.insecure", "CORRAL_CLUSTER_INSECURE", null,
      "Start with a plain cluster port and peer port on a non-loopback cluster host (anyone who reaches"
          + " them can join the cluster and read cached bodies); without it such a node refuses to start"
          + " unless --cluster-tls-dir is given"),
  PEER_PORT("--peer-port", "corral.cluster.peer-port", "CORRAL_PEER_PORT", "PORT",
      "TCP port of the peer copy channel other nodes copy cached bytes from, bound to the cluster host"
          + " (HTTPS with client certificates under --cluster-tls-dir); 0 picks a free port"),
  PEER_FANOUT("--peer-fanout", "corral.cluster.peer-fanout", "CORRAL_PEER_FANOUT", "on/off",
      "on: copies between nodes come from any node that holds the bytes or is still receiving them, each"
          + " node pointed at by at most --peer-upload-cap copies of an artifact at once (the default); off: every copy comes from the node that"
          + " fetched (owner-only)"),
  PEER_UPLOAD_CAP("--peer-upload-cap", "corral.cluster.peer-upload-cap", "CORRAL_PEER_UPLOAD_CAP", "N",
      "With --peer-fanout: copies of one artifact a node is pointed at to send to other nodes at once"
          + " (past --peer-wait-bound the node that fetched is pointed at whatever its load)"),
  PEER_WAIT_BOUND("--peer-wait-bound", "corral.cluster.peer-wait-bound", "CORRAL_PEER_WAIT_BOUND", "DURATION",
      "With --peer-fanout: how long a node's copy waits for a free upload slot before it is sent to the"
          + " node that fetched, whatever its load (while no copy pointed elsewhere is still starting)"),
  SHARDS("--shards", "corral.cluster.shards", "CORRAL_SHARDS", "N",
      "Number of shards the keys are spread over: the same on every node of a cluster (a node with"
          + " another number is refused when it joins); about ten per node of the largest cluster planned"),
  NODE_NAME("--node-name", "corral.cluster.node-name", "CORRAL_NODE_NAME", "NAME",
      "Stable name of this node in logs and metrics (default: cluster host:port)"),
  MANAGEMENT_HOST("--management-host", "corral.management.host", "CORRAL_MANAGEMENT_HOST", "HOST",
      "Address Pekko Management's HTTP endpoints bind to (read-only routes that show the membership)"),
  MANAGEMENT_PORT("--management-port", "corral.management.port", "CORRAL_MANAGEMENT_PORT", "PORT",
      "Port of Pekko Management's HTTP endpoints; off unless set or --discovery is used (then 7626)"),
  JOURNAL("--journal", "corral.journal.url", "CORRAL_JOURNAL", "URL",
      "Database of the key records for a cluster: jdbc:postgresql://HOST:PORT/DB (default: an"
          + " embedded H2 database under the data directory, for one node)"),
  JOURNAL_USER("--journal-user", "corral.journal.user", "CORRAL_JOURNAL_USER", "USER",
      "User name for --journal"),
  JOURNAL_PASSWORD("--journal-password", "corral.journal.password", "CORRAL_JOURNAL_PASSWORD", "PASSWORD",
      "Password for --journal (visible in the process list: prefer --journal-password-file)"),
  JOURNAL_PASSWORD_FILE("--journal-password-file", "corral.journal.password-file",
      "CORRAL_JOURNAL_PASSWORD_FILE", "FILE", "File holding the password for --journal (read at start-up, trimmed)"),
  LOG_FORMAT("--log-format", "corral.log-format", "CORRAL_LOG_FORMAT", "text/json",
      "The application log on standard output: text lines, or one JSON object a line (time, level, logger,"
          + " thread, node, message, stack). Its level: CORRAL_LOG_LEVEL"),
  ACCESS_LOG("--access-log", "corral.access-log", "CORRAL_ACCESS_LOG", "FILE",
      "Where the access log (one line per request) goes: a file, appended to, or - for standard output."
          + " Without it, access lines are application log lines on the logger corral.access"),
  ACCESS_LOG_FORMAT("--access-log-format", "corral.access-log-format", "CORRAL_ACCESS_LOG_FORMAT", "text/json",
      "Format of --access-log: combined-log-like text, or one JSON object a line");

  private final String flag;
  private final String path;
  private final String env;
  private final String valueName;
  private final String description;

  Setting(String flag, String path, String env, String valueName, String description) {
    this.flag = flag;
    this.path = path;
    this.env = env;
    this.valueName = valueName;
    this.description = description;
  }

  /** The command-line flag, e.g. {@code --http-port}. */
  public String flag() {
    return flag;
  }

  /** The HOCON path, e.g. {@code corral.http.port}; empty for {@link #CONFIG}. */
  public Optional<String> path() {
    return Optional.ofNullable(path);
  }

  /** The environment variable, e.g. {@code CORRAL_HTTP_PORT}. */
  public String env() {
    return env;
  }

  /** What the value is, for the usage text, e.g. {@code PORT}. */
  public String valueName() {
    return valueName;
  }

  public String description() {
    return description;
  }

  /** The built-in default as written in {@code corral-defaults.conf}; empty when there is none. */
  public Optional<String> defaultValue() {
    return BuiltInDefaults.text(path);
  }

  /** Whether the flag takes no value (given: true); as a variable or in HOCON, true or false. */
  public boolean isSwitch() {
    return valueName == null;
  }

  /** The flag as shown in usage: with its value's name, unless it is a switch. */
  public String usage() {
    return isSwitch() ? flag : flag + " " + valueName;
  }

  /** Whether the flag may be given several times, each adding one value. */
  public boolean repeatable() {
    return this == REPO;
  }

  static Optional<Setting> byFlag(String flag) {
    return Arrays.stream(values()).filter(s -> s.flag.equals(flag)).findFirst();
  }

  /** The settings table in Markdown, for the README. */
  public static String markdownTable() {
    StringBuilder out = new StringBuilder();
    out.append("| Flag | HOCON | Environment | Default | Description |\n");
    out.append("|---|---|---|---|---|\n");
    for (Setting s : values()) {
      out.append("| `").append(s.usage()).append("` | ")
          .append(s.path == null ? "" : "`" + s.path + "`").append(" | `")
          .append(s.env).append("` | ")
          .append(s.defaultValue().map(d -> "`" + d + "`").orElse(""))
          .append(" | ").append(cell(s.description)).append(" |\n");
    }
    out.append('\n');
    out.append("Per repository, under `corral.repos.NAME` (defaults from `corral.repo-defaults`):\n\n");
    out.append("| Key | Default | Description |\n|---|---|---|\n");
    for (RepoSetting r : RepoSetting.values()) {
      out.append("| `").append(r.key()).append("` | ")
          .append(r.defaultText().map(d -> "`" + d + "`").orElse(""))
          .append(" | ").append(cell(r.description())).append(" |\n");
    }
    return out.toString();
  }

  private static String cell(String text) {
    return text.replace("|", "\\|");
  }
}
