package dev.corral.server;

import dev.corral.cluster.ClusterSettings;
import dev.corral.cluster.ClusterTls;
import dev.corral.http.ServeLimits;
import dev.corral.http.ConnectionLimits;
import dev.corral.http.TrustedProxies;
import dev.corral.core.fetch.FanOut;
import dev.corral.core.upstream.Lifetime;
import dev.corral.registry.generic.FreshnessRules;
import dev.corral.registry.generic.QueryPolicy;
import static dev.corral.server.SettingValues.quoted;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigOrigin;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigResolveOptions;
import com.typesafe.config.ConfigSyntax;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueFactory;
import com.typesafe.config.ConfigValueType;
import dev.corral.http.auth.ClientAuth;
import dev.corral.http.auth.TokenLines;
import dev.corral.http.auth.TokensFile;
import dev.corral.http.tls.Pem;
import dev.corral.http.tls.ServerTls;
import dev.corral.http.tls.UpstreamTls;
import dev.corral.http.upstream.AllowedHost;
import dev.corral.http.upstream.Credential;
import dev.corral.http.upstream.EgressProxy;
import java.io.IOException;
import java.net.URI;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Merges the sources and turns the merged HOCON into {@link CorralSettings}, checking every
 * value and naming a bad one as the user wrote it: the flag or variable if it came from there,
 * otherwise its HOCON path (plus file and line when it came from a file).
 */
final class SettingsReader {
  private static final Set<String> CREDENTIAL_KEYS =
      Set.of("type", "username", "password-env", "password-file", "token-env", "token-file");

  private final Config config;
  private final Map<String, String> labels;
  private final Map<String, String> env;

  private SettingsReader(Config config, Map<String, String> labels, Map<String, String> env) {
    this.config = config;
    this.labels = labels;
    this.env = env;
  }

  static CorralSettings read(SettingSources sources, Map<String, String> env) {
    Config file =
        sources.configFile
            .map(p -> parseFile(p, sources.configFileLabel))
            .orElse(ConfigFactory.empty());
    Config merged =
        sources.commandLine
            .withFallback(sources.environment)
            .withFallback(file)
            .withFallback(BuiltInDefaults.CONFIG);
    try {
      // ${?VAR} in the file resolves against the env passed in, never the process's own.
      // (resolveWith(other source) cannot handle self-references such as a = ${?VAR}, hence the
      // environment as a root-level fallback that is removed again after resolving.)
      ConfigObject resolved =
          merged
              .withFallback(ConfigValueFactory.fromMap(env))
              .resolve(ConfigResolveOptions.defaults().setUseSystemEnvironment(false).setAllowUnresolved(true))
              .root();
      for (String name : env.keySet()) {
        if (!merged.root().containsKey(name)) {
          resolved = resolved.withoutKey(name);
        }
      }
      merged = resolved.toConfig();
    } catch (ConfigException e) {
      throw new SettingsException(
          sources.configFileLabel == null ? "configuration" : sources.configFileLabel, e.getMessage());
    }
    return new SettingsReader(merged, sources.labels, env).settings(sources.warnings);
  }

  private static Config parseFile(Path file, String label) {
    if (Files.isDirectory(file)) {
      throw new SettingsException(label, quoted(file.toString()) + " is a directory, not a HOCON file");
    }
    if (!Files.isRegularFile(file)) {
      throw new SettingsException(label, "no such file: " + file);
    }
    String name = file.getFileName().toString().toLowerCase(Locale.ROOT);
    ConfigSyntax syntax =
        name.endsWith(".json")
            ? ConfigSyntax.JSON
            : name.endsWith(".properties") ? ConfigSyntax.PROPERTIES : ConfigSyntax.CONF;
    try {
      return ConfigFactory.parseFile(
          file.toFile(), ConfigParseOptions.defaults().setAllowMissing(false).setSyntax(syntax));
    } catch (ConfigException e) {
      throw new SettingsException(label, e.getMessage());
    }
  }

  private CorralSettings settings(List<String> sourceWarnings) {
    return hocon("corral", () -> {
      if (!config.hasPath("corral") || config.getValue("corral").valueType() != ConfigValueType.OBJECT) {
        throw new SettingsException("corral", "expected an object { ... }");
      }
      rejectUnknownNodeKeys(config.getObject("corral"), "corral");
      rejectUnknownRepoDefaults();

      String host = host(path(Setting.HTTP_HOST));
      int port = port(path(Setting.HTTP_PORT));
      ConnectionLimits connections = connectionLimits();
      String dataDirPath = path(Setting.DATA_DIR);
      Path dataDir = filePath(dataDirPath, text(dataDirPath));
      long maxSize = size(path(Setting.MAX_SIZE), SMALLEST_MAX_SIZE);
      long memoryCacheSize = size(path(Setting.MEMORY_CACHE_SIZE), 0);
      String tokenPath = path(Setting.ADMIN_TOKEN_FILE);
      Optional<String> adminToken =
          optionalText(tokenPath)
              .map(f -> readSecretFile(filePath(tokenPath, f), label(tokenPath)));
      String basePath = path(Setting.PUBLIC_BASE_URL);
      Optional<URI> publicBaseUrl = optionalText(basePath).map(u -> url(basePath, u));
      String proxiesPath = path(Setting.TRUSTED_PROXIES);
      TrustedProxies trustedProxies;
      try {
        trustedProxies = optionalText(proxiesPath).map(TrustedProxies::parse).orElse(TrustedProxies.none());
      } catch (IllegalArgumentException e) {
        throw new SettingsException(label(proxiesPath), e.getMessage());
      }
      Duration drainTimeout = duration(path(Setting.DRAIN_TIMEOUT), false);
      // Compared with the ticker only (CancelRegistry), never put on a timer.
      Duration tombstoneTtl = comparedDuration(path(Setting.TOMBSTONE_TTL), true);
      List<RepoSettings> repos = repos();
      ClusterSettings cluster = cluster();
      Optional<JournalSettings> journal = journal();

      List<String> warnings = new ArrayList<>(sourceWarnings);
      ClientAuth clientAuth = clientAuth(repos, warnings);
      if (repos.isEmpty()) {
        warnings.add("no repositories configured (--repo NAME=TYPE:URL): every request will get 404");
      }
      ServeLimits serveLimits = serveLimits();
      return new CorralSettings(
          host, port, connections, dataDir, maxSize, memoryCacheSize, adminToken, clientAuth, publicBaseUrl,
          trustedProxies, drainTimeout, tombstoneTtl, repos, cluster, journal, config, warnings, serveLimits,
          serverTls(), onOff(path(Setting.TLS_HTTP2)), upstreamProxy(warnings), logs(warnings));
    });
  }

  /** The front door's limits; more than a million connections is a typo, not a plan. */
  private ConnectionLimits connectionLimits() {
    int max = whole(path(Setting.MAX_CONNECTIONS), 1, MAX_CONNECTIONS);
    return new ConnectionLimits(max, duration(path(Setting.HEADER_READ_TIMEOUT), true),
        duration(path(Setting.IDLE_TIMEOUT), true));
  }

  private static final int MAX_CONNECTIONS = 1_000_000;

  /**
   * The smallest --max-size. A number without a unit is bytes, so "--max-size 10" (meant as
   * 10 GiB) made a store of 10 bytes, and the start evicted the whole cache to fit it. No store
   * is useful below a megabyte; 1 MiB still lets tests evict with small artifacts.
   */
  static final long SMALLEST_MAX_SIZE = 1L << 20;

  /**
   * A repository's connections to its upstream, at most. A pool's connections go to one host and
   * port from this node's one address, so the kernel's source ports (at most 64 Ki; 28 Ki by
   * default, ip_local_port_range) bound how many can ever be open: 65536 is past any real one.
   * The node-wide cap (a million) does not fit here: the pool's request buffer is a power of two
   * of at least 4 x this (UpstreamSettings.openRequestsFor), 262144 entries here, while 100000000
   * made it gigabytes (the first request ran the node out of memory) and 300000000 overflowed the
   * int and stopped the start with a stack trace.
   */
  static final int MAX_UPSTREAM_CONNECTIONS = 65_536;

  // ---- logs (docs/operations.md, "Logs")

  private LogSettings logs(List<String> warnings) {
    LogSettings.Format format = logFormat(path(Setting.LOG_FORMAT));
    String accessPath = path(Setting.ACCESS_LOG);
    String accessFormatPath = path(Setting.ACCESS_LOG_FORMAT);
    Optional<Path> accessLog = optionalText(accessPath).map(String::trim)
        .map(t -> t.equals("-") ? LogSettings.STDOUT : filePath(accessPath, t));
    LogSettings.Format accessFormat = logFormat(accessFormatPath);
    if (accessLog.isEmpty() && labels.containsKey(accessFormatPath)) {
      warnings.add(label(accessFormatPath) + " has no effect without " + Setting.ACCESS_LOG.flag()
          + ": access lines are application log lines (" + Setting.LOG_FORMAT.flag() + ")");
    }
    return new LogSettings(format, accessLog, accessFormat);
  }

  private LogSettings.Format logFormat(String path) {
    String text = text(path);
    return LogSettings.Format.parse(text).orElseThrow(() -> error(path, quoted(text) + " is not text or json"));
  }

  // ---- TLS and the egress proxy (docs/security.md, "TLS")

  /** The client port's certificate and key, loaded now: files that do not load stop the start. */
  private Optional<ServerTls> serverTls() {
    String certPath = path(Setting.TLS_CERT);
    String keyPath = path(Setting.TLS_KEY);
    Optional<String> cert = optionalText(certPath).map(t -> nonBlankPath(certPath, t));
    Optional<String> key = optionalText(keyPath).map(t -> nonBlankPath(keyPath, t));
    if (cert.isEmpty() && key.isEmpty()) {
      return Optional.empty();
    }
    if (cert.isEmpty()) {
      throw error(keyPath, "needs " + Setting.TLS_CERT.flag() + " too");
    }
    if (key.isEmpty()) {
      throw error(certPath, "needs " + Setting.TLS_KEY.flag() + " too");
    }
    try {
      return Optional.of(ServerTls.load(SettingSources.path(cert.get(), label(certPath)),
          SettingSources.path(key.get(), label(keyPath)), ServerTls.CHECK_EVERY));
    } catch (Pem.PemException e) {
      throw new SettingsException(label(certPath) + ", " + label(keyPath), e.getMessage());
    }
  }

  private boolean onOff(String path) {
    String v = text(path).trim().toLowerCase(Locale.ROOT);
    return switch (v) {
      case "on", "true" -> true;
      case "off", "false" -> false;
      default -> throw error(path, quoted(v) + " is not on or off");
    };
  }

  private Optional<EgressProxy> upstreamProxy(List<String> warnings) {
    String proxyPath = path(Setting.UPSTREAM_PROXY);
    String noProxyPath = path(Setting.UPSTREAM_NO_PROXY);
    List<String> noProxy = List.of();
    if (has(noProxyPath)) {
      noProxy = config.getValue(noProxyPath).valueType() == ConfigValueType.LIST
          ? config.getStringList(noProxyPath) : Arrays.asList(text(noProxyPath).split(","));
    }
    Optional<String> url = optionalText(proxyPath).filter(t -> !t.isBlank());
    if (url.isEmpty()) {
      if (!noProxy.isEmpty()) {
        warnings.add(label(noProxyPath) + " has no effect without " + Setting.UPSTREAM_PROXY.flag());
      }
      return Optional.empty();
    }
    try {
      return Optional.of(EgressProxy.parse(url.get(), noProxy));
    } catch (IllegalArgumentException e) {
      // The value is not echoed: a proxy URL may carry a password.
      throw error(proxyPath, e.getMessage());
    }
  }

  /** A repository's upstream TLS files, loaded now. */
  private UpstreamTls upstreamTls(String name) {
    String caPath = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.CA_BUNDLE.key());
    String certPath = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.CLIENT_CERT.key());
    String keyPath = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.CLIENT_KEY.key());
    Optional<Path> ca = optionalText(caPath).map(t -> filePath(caPath, t));
    Optional<Path> cert = optionalText(certPath).map(t -> filePath(certPath, t));
    Optional<Path> key = optionalText(keyPath).map(t -> filePath(keyPath, t));
    if (cert.isPresent() && key.isEmpty()) {
      throw error(certPath, "needs " + RepoSetting.CLIENT_KEY.key() + " too");
    }
    if (key.isPresent() && cert.isEmpty()) {
      throw error(keyPath, "needs " + RepoSetting.CLIENT_CERT.key() + " too");
    }
    try {
      return UpstreamTls.load(ca, cert, key);
    } catch (Pem.PemException e) {
      throw new SettingsException(ConfigUtil.joinPath("corral", "repos", name), e.getMessage());
    }
  }

  // ---- client authentication

  /**
   * The tokens file, read and checked now (a bad line stops the start, named by its number and
   * never shown), and the anonymous repositories, each of which must be configured.
   */
  private ClientAuth clientAuth(List<RepoSettings> repos, List<String> warnings) {
    Set<String> names = repos.stream().map(RepoSettings::name).collect(Collectors.toUnmodifiableSet());
    String anonymousPath = path(Setting.ANONYMOUS_REPOS);
    Set<String> anonymous = new java.util.LinkedHashSet<>();
    if (has(anonymousPath)) {
      List<String> items = config.getValue(anonymousPath).valueType() == ConfigValueType.LIST
          ? config.getStringList(anonymousPath) : Arrays.asList(text(anonymousPath).split(","));
      for (String item : items) {
        String repo = item.trim();
        if (!names.contains(repo)) {
          throw error(anonymousPath, repo.isEmpty() ? "empty repository name in the list"
              : "no repository called " + quoted(repo) + " is configured");
        }
        anonymous.add(repo);
      }
    }
    String tokensPath = path(Setting.TOKENS_FILE);
    Optional<String> file = optionalText(tokensPath);
    if (file.isEmpty()) {
      if (!anonymous.isEmpty()) {
        warnings.add(label(anonymousPath) + " has no effect without " + Setting.TOKENS_FILE.flag() + ": every repository is open");
      }
      return ClientAuth.open();
    }
    String label = label(tokensPath);
    Path tokensFile = filePath(tokensPath, file.get());
    try {
      return new ClientAuth(Optional.of(TokensFile.open(tokensFile, names)), anonymous);
    } catch (TokenLines.Malformed e) {
      throw new SettingsException(label, tokensFile + " " + e.getMessage());
    } catch (NoSuchFileException e) {
      throw new SettingsException(label, "cannot read " + tokensFile + ": no such file");
    } catch (AccessDeniedException e) {
      throw new SettingsException(label, "cannot read " + tokensFile + ": permission denied");
    } catch (IOException e) {
      throw new SettingsException(label, "cannot read " + tokensFile + ": " + e.getClass().getSimpleName());
    }
  }

  // ---- unknown keys

  private static final Set<String> NODE_PATHS =
      Arrays.stream(Setting.values())
          .flatMap(s -> s.path().stream())
          .collect(Collectors.toUnmodifiableSet());

  /** Every key under corral must be a setting of the table; repos are checked on their own. */
  private void rejectUnknownNodeKeys(ConfigObject object, String prefix) {
    for (String key : object.keySet()) {
      String path = prefix + "." + ConfigUtil.joinPath(key);
      if (path.equals("corral.repos") || path.equals("corral.repo-defaults") || NODE_PATHS.contains(path)) {
        continue;
      }
      ConfigValue value = object.get(key);
      boolean isGroup = NODE_PATHS.stream().anyMatch(p -> p.startsWith(path + "."));
      if (isGroup && value.valueType() == ConfigValueType.OBJECT) {
        rejectUnknownNodeKeys((ConfigObject) value, path);
      } else if (isGroup) {
        throw new SettingsException(path, "expected an object { ... }" + where(value.origin()));
      } else {
        throw new SettingsException(path, "unknown setting (see corral help)" + where(value.origin()));
      }
    }
  }

  private void rejectUnknownRepoDefaults() {
    ConfigObject defaults = object("corral.repo-defaults");
    for (String key : defaults.keySet()) {
      Optional<RepoSetting> setting = RepoSetting.byKey(key);
      String path = ConfigUtil.joinPath("corral", "repo-defaults", key);
      if (setting.isEmpty()) {
        throw error(path, "unknown setting (known: " + knownRepoKeys(true) + ")");
      }
      if (!setting.get().inRepoDefaults()) {
        throw error(path, "can only be set per repository, under corral.repos.NAME");
      }
    }
  }

  private static String knownRepoKeys(boolean inDefaults) {
    return Arrays.stream(RepoSetting.values())
        .filter(r -> !inDefaults || r.inRepoDefaults())
        .map(RepoSetting::key)
        .collect(Collectors.joining(", "));
  }

  // ---- cluster and journal

  private ClusterSettings cluster() {
    String host = host(path(Setting.CLUSTER_HOST));
    int port = port(path(Setting.CLUSTER_PORT));
    String seedsPath = path(Setting.SEED_NODES);
    List<String> seeds = new ArrayList<>();
    if (has(seedsPath)) {
      ConfigValue value = config.getValue(seedsPath);
      List<String> items = value.valueType() == ConfigValueType.LIST
          ? config.getStringList(seedsPath)
          : Arrays.asList(text(seedsPath).split(","));
      for (String item : items) {
        seeds.add(seedNode(seedsPath, item.trim()));
      }
    }
    String discoveryPath = path(Setting.DISCOVERY);
    String discoveryText = text(discoveryPath).trim();
    ClusterSettings.Discovery discovery = ClusterSettings.Discovery.parse(discoveryText)
        .orElseThrow(() -> error(discoveryPath, quoted(discoveryText) + " is not none, config or kubernetes-api"));
    if (!seeds.isEmpty() && discovery != ClusterSettings.Discovery.NONE) {
      throw error(seedsPath, "set seed nodes or " + label(discoveryPath) + ", not both");
    }
    String namePath = path(Setting.NODE_NAME);
    Optional<String> nodeName = optionalText(namePath).map(String::trim);
    if (nodeName.isPresent() && !NODE_NAME.matcher(nodeName.get()).matches()) {
      throw error(namePath, quoted(nodeName.get()) + " is not a node name (" + NODE_NAME.pattern() + ")");
    }
    String managementHost = host(path(Setting.MANAGEMENT_HOST));
    String managementPortPath = path(Setting.MANAGEMENT_PORT);
    OptionalInt managementPort =
        has(managementPortPath) ? OptionalInt.of(port(managementPortPath)) : OptionalInt.empty();
    String tlsPath = path(Setting.CLUSTER_TLS_DIR);
    Optional<ClusterTls> tls = optionalText(tlsPath)
        .map(d -> new ClusterTls(filePath(tlsPath, d.trim())));
    if (tls.isPresent()) {
      Optional<String> problem = tls.get().problem();
      if (problem.isPresent()) {
        throw new SettingsException(label(tlsPath), problem.get());
      }
    }
    boolean insecure = bool(path(Setting.CLUSTER_INSECURE));
    int peerPort = port(path(Setting.PEER_PORT));
    String shardsPath = path(Setting.SHARDS);
    int shards = whole(shardsPath, 1, ClusterSettings.MAX_SHARDS);
    boolean fanOut = onOff(path(Setting.PEER_FANOUT));
    int uploadCap = whole(path(Setting.PEER_UPLOAD_CAP), 1);
    Duration waitBound = duration(path(Setting.PEER_WAIT_BOUND), false);
    ClusterSettings cluster = new ClusterSettings(host, port, seeds, discovery, nodeName, managementHost, managementPort,
        tls, insecure, peerPort, shards, new FanOut(fanOut, uploadCap, waitBound));
    Optional<String> exposed = cluster.exposureProblem();
    if (exposed.isPresent()) {
      // Refused here, before anything binds: one line naming both ways out.
      throw new SettingsException(label(path(Setting.CLUSTER_HOST)), exposed.get());
    }
    return cluster;
  }

  /** A switch: true or false (also yes/no, on/off); unset is false. */
  private boolean bool(String path) {
    if (!has(path)) {
      return false;
    }
    String t = text(path).trim().toLowerCase(java.util.Locale.ROOT);
    return switch (t) {
      case "true", "yes", "on" -> true;
      case "false", "no", "off" -> false;
      default -> throw error(path, quoted(t) + " is not true or false");
    };
  }

  private static final java.util.regex.Pattern NODE_NAME =
      java.util.regex.Pattern.compile("[A-Za-z0-9][A-Za-z0-9._:-]{0,62}");

  /**
   * A seed node's HOST:PORT, as Pekko will parse it inside pekko://corral@HOST:PORT: a host name
   * (letters, digits, - and ., its last label starting with a letter), an IPv4 address, or an
   * IPv6 address in brackets, and a port from 1 to 65535. Anything else (::1:25520, a#b:25520)
   * stopped the start with Pekko's bare exception.
   */
  private String seedNode(String path, String item) {
    String notHostPort = quoted(item) + " is not HOST:PORT (a seed node's cluster host and port)";
    int colon = item.startsWith("[") ? item.indexOf("]:") + 1 : item.lastIndexOf(':');
    if (colon <= 0) {
      throw error(path, notHostPort);
    }
    String host = item.substring(0, colon);
    int port = SettingValues.port(item.substring(colon + 1));
    if (!isSeedHost(host)) {
      throw error(path, notHostPort + ": " + quoted(host) + " is not a host name, an IPv4 address or an IPv6"
          + " address in brackets" + (host.indexOf(':') >= 0 && !host.startsWith("[") ? " ([" + host + "])" : ""));
    }
    if (port <= 0) {
      throw error(path, notHostPort + ": the port must be between 1 and 65535");
    }
    return host + ":" + port;
  }

  private static boolean isSeedHost(String host) {
    if (host.startsWith("[") && host.endsWith("]")) {
      String literal = host.substring(1, host.length() - 1);
      if (!IPV6_CHARS.matcher(literal).matches()) {
        return false;
      }
      try {
        return new URI("http://" + host + "/").getHost() != null; // the URI parser checks the literal
      } catch (java.net.URISyntaxException e) {
        return false;
      }
    }
    return IPV4.matcher(host).matches() || HOST_NAME.matcher(host).matches();
  }

  private static final String LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  /** Labels of letters, digits and -; the last one starts with a letter (else it is no host name to a URI). */
  private static final java.util.regex.Pattern HOST_NAME =
      java.util.regex.Pattern.compile("(?:" + LABEL + "\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?");
  private static final java.util.regex.Pattern IPV4 = java.util.regex.Pattern.compile(
      "(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])");
  private static final java.util.regex.Pattern IPV6_CHARS = java.util.regex.Pattern.compile("[0-9A-Fa-f:.]+");

  private Optional<JournalSettings> journal() {
    String urlPath = path(Setting.JOURNAL);
    String userPath = path(Setting.JOURNAL_USER);
    String passwordPath = path(Setting.JOURNAL_PASSWORD);
    String filePath = path(Setting.JOURNAL_PASSWORD_FILE);
    if (!has(urlPath)) {
      for (String p : List.of(userPath, passwordPath, filePath)) {
        if (has(p)) {
          throw error(p, "needs " + Setting.JOURNAL.flag() + " (the embedded database takes no credentials)");
        }
      }
      return Optional.empty();
    }
    String url = text(urlPath).trim();
    if (!JDBC_POSTGRES.matcher(url).matches()) {
      throw error(urlPath, quoted(SettingValues.withoutSecrets(url)) + " is not jdbc:postgresql://HOST:PORT/DB");
    }
    Optional<String> user = optionalText(userPath);
    if (has(passwordPath) && has(filePath)) {
      throw error(filePath, "set " + label(passwordPath) + " or " + label(filePath) + ", not both");
    }
    Optional<String> password = has(filePath)
        ? Optional.of(readSecretFile(filePath(filePath, text(filePath)), label(filePath)))
        : optionalText(passwordPath);
    return Optional.of(new JournalSettings(url, user, password, label(urlPath)));
  }

  private static final java.util.regex.Pattern JDBC_POSTGRES =
      java.util.regex.Pattern.compile("jdbc:postgresql://[^/\\s]+(:\\d+)?/[^/\\s?]+(\\?\\S*)?");

  // ---- repositories

  private List<RepoSettings> repos() {
    ConfigObject repos = object("corral.repos");
    List<RepoSettings> result = new ArrayList<>();
    for (String name : new TreeSet<>(repos.keySet())) {
      String base = ConfigUtil.joinPath("corral", "repos", name);
      String nameProblem = SettingValues.repoNameProblem(name);
      if (nameProblem != null) {
        throw error(base, nameProblem);
      }
      ConfigValue value = repos.get(name);
      if (value.valueType() != ConfigValueType.OBJECT) {
        throw error(base, "expected an object { type, url, ... }");
      }
      for (String key : ((ConfigObject) value).keySet()) {
        if (RepoSetting.byKey(key).isEmpty()) {
          throw error(ConfigUtil.joinPath("corral", "repos", name, key),
              "unknown setting (known: " + knownRepoKeys(false) + ")");
        }
      }
      result.add(repo(name));
    }
    groups(result);
    List<String> rootMirrors = result.stream().filter(RepoSettings::rootMirror).map(RepoSettings::name).toList();
    if (rootMirrors.size() > 1) {
      throw error(ConfigUtil.joinPath("corral", "repos", rootMirrors.get(1), RepoSetting.ROOT_MIRROR.key()),
          "only one repository can be served at /v2/ without its name (also set for " + rootMirrors.get(0) + ")");
    }
    return result;
  }

  private RepoSettings repo(String name) {
    String typePath = ConfigUtil.joinPath("corral", "repos", name, "type");
    String type = text(typePath).trim();
    String typeProblem = SettingValues.repoTypeProblem(type);
    if (typeProblem != null) {
      throw error(typePath, typeProblem);
    }
    boolean group = type.equals(RepoSettings.GROUP);
    String urlPath = ConfigUtil.joinPath("corral", "repos", name, "url");
    String url = "";
    if (group) {
      groupKeysOnly(name);
    } else {
      url = text(urlPath).trim();
      url(urlPath, url);
    }

    String firstBytePath = field(name, RepoSetting.FIRST_BYTE_TIMEOUT);
    Duration firstByteTimeout = duration(firstBytePath, true);
    String budgetPath = field(name, RepoSetting.WAITER_BUDGET);
    Duration waiterBudget;
    if (has(budgetPath)) {
      waiterBudget = duration(budgetPath, true);
    } else {
      waiterBudget = RepoSettings.defaultWaiterBudget(firstByteTimeout);
      if (waiterBudget.compareTo(LONGEST_TIMER) > 0) {
        throw error(firstBytePath, quoted(text(firstBytePath)) + " is too long without a waiter-budget: the budget"
            + " it makes, 2 x first-byte-timeout + 3s, must be at most " + SettingValues.durationText(LONGEST_TIMER)
            + " (a timer waits no longer); set waiter-budget, or a shorter first-byte-timeout");
      }
    }
    int retries = whole(field(name, RepoSetting.RETRIES), 0);
    Duration retryBackoff = retryBackoff(field(name, RepoSetting.RETRY_BACKOFF), retries);
    String onExhaustedPath = field(name, RepoSetting.ON_BUDGET_EXHAUSTED);
    String onExhausted = text(onExhaustedPath);
    RepoSettings.OnBudgetExhausted onBudgetExhausted =
        RepoSettings.OnBudgetExhausted.parse(onExhausted)
            .orElseThrow(() -> error(onExhaustedPath, quoted(onExhausted) + " is not \"504\" or \"bypass\""));

    // negative-ttl, metadata-ttl, max-stale and max-age-unused are only compared with a clock
    // (Freshness, FetchPolicy, DiskStore.removeUnused, whose sweep runs at least hourly): no timer.
    return new RepoSettings(
        name,
        type,
        url,
        duration(field(name, RepoSetting.CONNECT_TIMEOUT), true),
        firstByteTimeout,
        duration(field(name, RepoSetting.IDLE_TIMEOUT), true),
        retries,
        retryBackoff,
        whole(field(name, RepoSetting.MAX_REDIRECTS), 0),
        whole(field(name, RepoSetting.MAX_CONNECTIONS), 1, MAX_UPSTREAM_CONNECTIONS),
        comparedDuration(field(name, RepoSetting.NEGATIVE_TTL), false),
        waiterBudget,
        onBudgetExhausted,
        whole(field(name, RepoSetting.MAX_WAITERS), 1),
        whole(field(name, RepoSetting.MAX_ORPHAN_FETCHES), 0),
        size(field(name, RepoSetting.INLINE_LIMIT), 0, LARGEST_INLINE_LIMIT,
            " (a body up to it is held whole in memory while it downloads)"),
        credential(name),
        comparedDuration(field(name, RepoSetting.METADATA_TTL), false),
        comparedDuration(field(name, RepoSetting.MAX_STALE), false),
        sumdbUrl(name, type),
        query(name, type),
        allowedHosts(name), upstreamTls(name), singleNameNamespace(name, type), rootMirror(name, type),
        maxAgeUnused(field(name, RepoSetting.MAX_AGE_UNUSED)),
        group ? members(name) : noMembers(name),
        freshness(name, type));
  }

  /**
   * The shortest max-age-unused but 0s (never): the sweep runs every 24th of the age but at most
   * every second, so an age under a second (1ms) means nothing the sweep can keep to. Not longer:
   * the age is the operator's (a cleanup policy is counted in days, but CleanupPolicyIT checks a
   * real process's sweep with 2s).
   */
  static final Duration SHORTEST_MAX_AGE_UNUSED = Duration.ofSeconds(1);

  private Duration maxAgeUnused(String path) {
    Duration age = comparedDuration(path, false);
    if (!age.isZero() && age.compareTo(SHORTEST_MAX_AGE_UNUSED) < 0) {
      throw error(path, quoted(text(path)) + " is too short: must be at least "
          + SettingValues.durationText(SHORTEST_MAX_AGE_UNUSED) + ", or 0s for never (the sweep runs at most every second)");
    }
    return age;
  }

  /**
   * The pause before a retry, which doubles before each further one (HttpUpstream.retry: the
   * backoff x 2^min(failures, 10)): the last of {@code retries} pauses must fit a timer too.
   */
  private Duration retryBackoff(String path, int retries) {
    Duration backoff = duration(path, false);
    long factor = 1L << Math.min(Math.max(retries - 1, 0), 10);
    if (backoff.multipliedBy(factor).compareTo(LONGEST_TIMER) > 0) {
      throw error(path, quoted(text(path)) + " is too long for " + retries + " retries: the pause doubles before"
          + " each further retry, to " + factor + " x it; must be at most "
          + SettingValues.durationText(LONGEST_TIMER.dividedBy(factor)) + " (a timer waits no longer than "
          + SettingValues.durationText(LONGEST_TIMER) + "), or fewer retries");
    }
    return backoff;
  }

  /**
   * The largest inline-limit. A body up to the limit is collected whole on the heap while it
   * downloads (Download: a ByteStringBuilder, which cannot pass 2 GiB) and answered as one
   * ByteString, once per fetch in flight: up to max-connections of them per repository, besides
   * the orphans. A 4 GiB limit ran a node with a small heap out of memory on a large download.
   * The default, 8 MiB, is for the small files whose waiters should get a clean 502 rather than a
   * cut stream when a transfer breaks (B2); 64 MiB is 8 x that, and past it a few downloads at
   * once would take most of the default 1 GiB heap (16 fill it). A larger body loses nothing by
   * streaming: it is announced with its exact length and cut short of it when the download fails,
   * so it never looks complete (B2).
   */
  static final long LARGEST_INLINE_LIMIT = 64L << 20;

  /** A group has only its type and members: every other setting is its members' own. */
  private void groupKeysOnly(String name) {
    ConfigObject own = object(ConfigUtil.joinPath("corral", "repos", name));
    for (String key : new TreeSet<>(own.keySet())) {
      if (!key.equals(RepoSetting.TYPE.key()) && !key.equals(RepoSetting.MEMBERS.key())) {
        throw error(ConfigUtil.joinPath("corral", "repos", name, key),
            "a group has no " + key + " of its own: its members' settings apply");
      }
    }
  }

  /** A group's members as listed (a list, or a comma-separated string); checked against the others in {@link #groups}. */
  private List<String> members(String name) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.MEMBERS.key());
    if (!has(path)) {
      throw error(ConfigUtil.joinPath("corral", "repos", name),
          "a group needs its members: members = [M1, M2] (--repo " + name + "=group:M1,M2)");
    }
    ConfigValue value = hocon(path, () -> config.getValue(path));
    List<String> items = new ArrayList<>();
    if (value.valueType() == ConfigValueType.LIST) {
      for (ConfigValue v : config.getList(path)) {
        if (v.valueType() == ConfigValueType.OBJECT || v.valueType() == ConfigValueType.LIST) {
          throw error(path, "expected a list of repository names");
        }
        items.add(String.valueOf(v.unwrapped()).trim());
      }
    } else {
      for (String item : text(path).split(",", -1)) {
        items.add(item.trim());
      }
    }
    if (items.isEmpty()) {
      throw error(path, "a group needs at least one member");
    }
    for (String item : items) {
      if (item.isEmpty()) {
        throw error(path, "empty repository name in the list");
      }
    }
    return items;
  }

  private List<String> noMembers(String name) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.MEMBERS.key());
    if (has(path)) {
      throw error(path, "only a group has members (type = group)");
    }
    return List.of();
  }

  /**
   * Each group's members are configured repositories, none twice, none a group, all of one type,
   * and not oci (an image client reaches each oci repository under its own /v2/NAME/; a group of
   * them is not served yet).
   */
  private void groups(List<RepoSettings> repos) {
    Map<String, RepoSettings> byName = new HashMap<>();
    repos.forEach(r -> byName.put(r.name(), r));
    for (RepoSettings g : repos) {
      if (!g.isGroup()) {
        continue;
      }
      String path = ConfigUtil.joinPath("corral", "repos", g.name(), RepoSetting.MEMBERS.key());
      Set<String> seen = new HashSet<>();
      String type = null;
      String typedBy = null;
      for (String m : g.members()) {
        if (m.equals(g.name())) {
          throw error(path, "a group cannot be its own member");
        }
        RepoSettings member = byName.get(m);
        if (member == null) {
          throw error(path, "no repository called " + quoted(m) + " is configured");
        }
        if (member.isGroup()) {
          throw error(path, quoted(m) + " is a group: a group cannot be a member of a group");
        }
        if (!seen.add(m)) {
          throw error(path, quoted(m) + " is listed twice");
        }
        if (member.type().equals("oci")) {
          throw error(path, quoted(m) + " is an oci repository: oci groups are not served yet (image clients"
              + " reach each oci repository under /v2/NAME/)");
        }
        if (type == null) {
          type = member.type();
          typedBy = m;
        } else if (!type.equals(member.type())) {
          throw error(path, "members must be of one type: " + quoted(typedBy) + " is " + type + ", "
              + quoted(m) + " is " + member.type());
        }
      }
    }
  }

  private static final Set<String> FRESHNESS_RULE_KEYS = Set.of("path", "ttl", "immutable");

  /**
   * A list of rules, each {@code { path = GLOB, ttl = DURATION }} or
   * {@code { path = GLOB, immutable = true }}; none when unset.
   */
  private FreshnessRules freshness(String name, String type) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.FRESHNESS.key());
    if (!has(path)) {
      return FreshnessRules.NONE;
    }
    if (!type.equals("generic")) {
      throw error(path, "only generic repositories take freshness rules (the other types know which of their"
          + " files change)");
    }
    ConfigValue value = hocon(path, () -> config.getValue(path));
    String shape = "expected a list of { path = PATTERN, ttl = DURATION } or { path = PATTERN, immutable = true }";
    if (value.valueType() != ConfigValueType.LIST) {
      throw error(path, shape);
    }
    List<FreshnessRules.Rule> rules = new ArrayList<>();
    List<? extends ConfigValue> items = config.getList(path);
    for (int i = 0; i < items.size(); i++) {
      ConfigValue item = items.get(i);
      if (items.get(i).valueType() != ConfigValueType.OBJECT) {
        throw ruleError(path, i, item, shape);
      }
      ConfigObject object = (ConfigObject) items.get(i);
      for (String key : object.keySet()) {
        if (!FRESHNESS_RULE_KEYS.contains(key)) {
          throw ruleError(path, i, item, "unknown key " + quoted(key) + " (known: immutable, path, ttl)");
        }
      }
      Config rule = object.toConfig();
      if (!rule.hasPath("path") || rule.getValue("path").valueType() != ConfigValueType.STRING) {
        throw ruleError(path, i, item, "needs path = PATTERN (a glob over the path after the repository name, e.g. \"dists/**\")");
      }
      String pattern = rule.getString("path");
      boolean hasTtl = rule.hasPath("ttl");
      boolean hasImmutable = rule.hasPath("immutable");
      if (hasTtl == hasImmutable) {
        throw ruleError(path, i, item, "needs exactly one of ttl = DURATION and immutable = true");
      }
      Lifetime lifetime;
      if (hasImmutable) {
        if (rule.getValue("immutable").valueType() != ConfigValueType.BOOLEAN || !rule.getBoolean("immutable")) {
          throw ruleError(path, i, item, "immutable: " + "must be true (leave the rule out to follow the upstream's headers)");
        }
        lifetime = Lifetime.IMMUTABLE;
      } else {
        String ttlText = String.valueOf(rule.getValue("ttl").unwrapped());
        if (SettingValues.lacksUnit(ttlText)) {
          throw ruleError(path, i, item, "ttl: " + SettingValues.notADuration(ttlText));
        }
        Duration ttl;
        try {
          ttl = rule.getDuration("ttl");
        } catch (ConfigException e) {
          throw ruleError(path, i, item, "ttl: " + SettingValues.notADuration(ttlText));
        }
        if (ttl.isNegative()) {
          throw ruleError(path, i, item, "ttl: " + "must not be negative");
        }
        lifetime = Lifetime.fixed(ttl);
      }
      try {
        rules.add(new FreshnessRules.Rule(pattern, lifetime));
      } catch (IllegalArgumentException e) {
        throw ruleError(path, i, item, "path: " + e.getMessage());
      }
    }
    return new FreshnessRules(rules);
  }

  /** A problem with the {@code i}th rule of a list setting, located at the rule itself. */
  private SettingsException ruleError(String path, int i, ConfigValue rule, String problem) {
    return new SettingsException(label(path), "rule " + (i + 1) + ": " + problem + where(rule.origin()));
  }

  /** A list (or a comma-separated string) of HOST or HOST:PORT entries; empty when unset. */
  private List<AllowedHost> allowedHosts(String name) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.ALLOWED_HOSTS.key());
    if (!has(path)) {
      return List.of();
    }
    ConfigValue value = hocon(path, () -> config.getValue(path));
    List<String> items = new ArrayList<>();
    if (value.valueType() == ConfigValueType.LIST) {
      for (ConfigValue v : config.getList(path)) {
        if (v.valueType() == ConfigValueType.OBJECT || v.valueType() == ConfigValueType.LIST) {
          throw error(path, "expected a list of HOST or HOST:PORT");
        }
        items.add(String.valueOf(v.unwrapped()));
      }
    } else {
      items.addAll(Arrays.asList(text(path).split(",")));
    }
    List<AllowedHost> out = new ArrayList<>();
    for (String item : items) {
      try {
        out.add(AllowedHost.parse(item));
      } catch (IllegalArgumentException e) {
        throw error(path, e.getMessage());
      }
    }
    return out;
  }

  private QueryPolicy query(String name, String type) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.QUERY.key());
    if (!has(path)) {
      return QueryPolicy.keep();
    }
    if (!type.equals("generic")) {
      throw error(path, "only generic repositories take a query policy (the other types know their queries)");
    }
    ConfigValue value = hocon(path, () -> config.getValue(path));
    List<String> values = new ArrayList<>();
    if (value.valueType() == ConfigValueType.LIST) {
      for (ConfigValue v : config.getList(path)) {
        if (v.valueType() == ConfigValueType.OBJECT || v.valueType() == ConfigValueType.LIST) {
          throw error(path, "expected keep, drop, or a list of parameter names");
        }
        values.add(String.valueOf(v.unwrapped()));
      }
    } else {
      values.add(text(path));
    }
    try {
      return QueryPolicy.parse(values);
    } catch (IllegalArgumentException e) {
      throw error(path, e.getMessage());
    }
  }

  private ServeLimits serveLimits() {
    String memoryPath = path(Setting.METADATA_MEMORY);
    String memory = text(memoryPath).trim();
    long metadataMemory = memory.equalsIgnoreCase("auto") ? ServeLimits.defaultMetadataMemory()
        : sizeOrAuto(memoryPath, 1024 * 1024);
    String ratePath = path(Setting.MISS_RATE_LIMIT);
    String burstPath = path(Setting.MISS_RATE_BURST);
    String rate = text(ratePath).trim();
    Optional<ServeLimits.MissRate> missRate = Optional.empty();
    if (rate.equalsIgnoreCase("off")) {
      if (has(burstPath)) {
        throw error(burstPath, "has no effect without " + Setting.MISS_RATE_LIMIT.flag() + " (it is off)");
      }
    } else {
      java.util.regex.Matcher m = MISS_RATE.matcher(rate);
      if (!m.matches()) {
        throw error(ratePath, quoted(rate) + " is not a rate (N/s, N/m or N/h, e.g. 50/s) or off");
      }
      long n;
      try {
        n = Long.parseLong(m.group(1));
      } catch (NumberFormatException e) {
        throw error(ratePath, quoted(rate) + " is too large");
      }
      if (n < 1 || n > 1_000_000_000L) {
        throw error(ratePath, "must be between 1 and 1000000000 per unit");
      }
      double seconds = switch (m.group(2).toLowerCase(Locale.ROOT)) {
        case "s" -> 1;
        case "m" -> 60;
        default -> 3600;
      };
      long burst = has(burstPath) ? whole(burstPath, 1) : n;
      missRate = Optional.of(new ServeLimits.MissRate(n / seconds, burst));
    }
    return new ServeLimits(metadataMemory, ServeLimits.DEFAULT_METADATA_WAIT, missRate);
  }

  private static final java.util.regex.Pattern MISS_RATE =
      java.util.regex.Pattern.compile("([0-9]{1,12})\\s*/\\s*([smhSMH])");

  private long sizeOrAuto(String path, long min) {
    String text = text(path);
    if (!SettingValues.isSizeShaped(text)) {
      throw error(path, quoted(text) + SettingValues.SIZE_PROBLEM + " or auto");
    }
    return size(path, min);
  }

  private Optional<String> sumdbUrl(String name, String type) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.SUMDB_URL.key());
    if (!has(path)) {
      return Optional.empty();
    }
    if (!type.equals("go")) {
      throw error(path, "only go repositories proxy a checksum database");
    }
    String url = text(path).trim();
    url(path, url);
    return Optional.of(url);
  }

  private Optional<String> singleNameNamespace(String name, String type) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.SINGLE_NAME_NAMESPACE.key());
    if (!has(path)) {
      return Optional.empty();
    }
    if (!type.equals("oci")) {
      throw error(path, "only oci repositories have image names");
    }
    String namespace = text(path).trim();
    if (!dev.corral.registry.oci.OciRepository.isNamespace(namespace)) {
      throw error(path, quoted(namespace) + " is not an image namespace (lower-case letters and digits)");
    }
    return Optional.of(namespace);
  }

  private boolean rootMirror(String name, String type) {
    String path = ConfigUtil.joinPath("corral", "repos", name, RepoSetting.ROOT_MIRROR.key());
    if (!has(path)) {
      return false;
    }
    if (!type.equals("oci")) {
      throw error(path, "only an oci repository can be served at /v2/ without its name");
    }
    return hocon(path, () -> config.getBoolean(path));
  }

  /** The repository's own path for the key if set there, else the repo-defaults path. */
  private String field(String name, RepoSetting setting) {
    String own = ConfigUtil.joinPath("corral", "repos", name, setting.key());
    return has(own) ? own : ConfigUtil.joinPath("corral", "repo-defaults", setting.key());
  }

  private Optional<Credential> credential(String name) {
    String base = ConfigUtil.joinPath("corral", "repos", name, "credentials");
    if (!has(base)) {
      return Optional.empty();
    }
    if (config.getValue(base).valueType() != ConfigValueType.OBJECT) {
      throw error(base, "expected an object { type, ... }");
    }
    for (String key : config.getObject(base).keySet()) {
      if (!CREDENTIAL_KEYS.contains(key)) {
        String hint = key.equals("password") || key.equals("token")
            ? "secrets are not written in the configuration: use " + key + "-env or " + key + "-file"
            : "unknown setting (known: " + String.join(", ", new TreeSet<>(CREDENTIAL_KEYS)) + ")";
        throw error(ConfigUtil.joinPath("corral", "repos", name, "credentials", key), hint);
      }
    }
    String typePath = base + ".type";
    String type = text(typePath).trim().toLowerCase(Locale.ROOT);
    switch (type) {
      case "basic" -> {
        forbid(base, "basic", "token-env", "token-file");
        String username = text(base + ".username");
        if (username.isEmpty()) {
          throw error(base + ".username", "must not be empty");
        }
        return Optional.of(new Credential.Basic(username, secret(base, "password")));
      }
      case "bearer" -> {
        forbid(base, "bearer", "username", "password-env", "password-file");
        return Optional.of(new Credential.Bearer(secret(base, "token")));
      }
      default -> throw error(typePath, "unknown credentials type " + quoted(type) + " (known: basic, bearer)");
    }
  }

  private void forbid(String base, String type, String... keys) {
    for (String key : keys) {
      if (has(base + "." + key)) {
        throw error(base + "." + key, "does not belong to type = " + type);
      }
    }
  }

  /** The secret named by {@code <what>-env} or {@code <what>-file} (exactly one of them). */
  private String secret(String base, String what) {
    String envPath = base + "." + what + "-env";
    String filePath = base + "." + what + "-file";
    boolean fromEnv = has(envPath);
    boolean fromFile = has(filePath);
    if (fromEnv == fromFile) {
      throw error(base, fromEnv
          ? "set " + what + "-env or " + what + "-file, not both"
          : "missing " + what + "-env or " + what + "-file");
    }
    if (fromEnv) {
      String variable = text(envPath).trim();
      String value = env.get(variable);
      if (value == null || value.isEmpty()) {
        throw error(envPath, "environment variable " + variable + " is not set or empty");
      }
      return value;
    }
    String label = label(filePath);
    return readSecretFile(filePath(filePath, text(filePath)), label);
  }

  /** The file's contents, trimmed; an unreadable or empty file is an error. */
  private static String readSecretFile(Path file, String label) {
    String contents;
    try {
      contents = Files.readString(file).trim();
    } catch (NoSuchFileException e) {
      throw new SettingsException(label, "cannot read " + file + ": no such file");
    } catch (AccessDeniedException e) {
      throw new SettingsException(label, "cannot read " + file + ": permission denied");
    } catch (IOException e) {
      throw new SettingsException(label, "cannot read " + file + ": " + e.getClass().getSimpleName());
    }
    if (contents.isEmpty()) {
      throw new SettingsException(label, file + " is empty");
    }
    return contents;
  }

  // ---- typed values

  private static String path(Setting setting) {
    return setting.path().orElseThrow();
  }

  private String label(String path) {
    return labels.getOrDefault(path, path);
  }

  private SettingsException error(String path, String problem) {
    String location = "";
    if (!labels.containsKey(path)) {
      try {
        location = where(config.getValue(path).origin());
      } catch (ConfigException e) {
        // no value there (a missing key): no location to add
      }
    }
    return new SettingsException(label(path), problem + location);
  }

  private static String where(ConfigOrigin origin) {
    return origin.filename() == null ? "" : " (" + origin.filename() + " line " + origin.lineNumber() + ")";
  }

  private boolean has(String path) {
    return hocon(path, () -> config.hasPath(path));
  }

  private ConfigObject object(String path) {
    if (!has(path) || config.getValue(path).valueType() != ConfigValueType.OBJECT) {
      throw error(path, "expected an object { ... }");
    }
    return config.getObject(path);
  }

  private String text(String path) {
    if (!has(path)) {
      throw error(path, "missing");
    }
    ConfigValue value = hocon(path, () -> config.getValue(path));
    if (value.valueType() == ConfigValueType.OBJECT || value.valueType() == ConfigValueType.LIST) {
      throw error(path, "expected a single value, not " + (value.valueType() == ConfigValueType.OBJECT ? "an object" : "a list"));
    }
    return String.valueOf(value.unwrapped());
  }

  private Optional<String> optionalText(String path) {
    return has(path) ? Optional.of(text(path)) : Optional.empty();
  }

  /**
   * A file or directory named by a setting. A blank one can only come from HOCON (a flag refuses
   * it, the environment counts it as unset) and is refused: an empty path is the working
   * directory (data-dir = "" put the store there); for a file it failed to read with an unclear
   * message, or, for tls-cert and access-log, quietly meant none.
   */
  private Path filePath(String path, String text) {
    return SettingSources.path(nonBlankPath(path, text), label(path));
  }

  private String nonBlankPath(String path, String text) {
    if (text.isBlank()) {
      throw error(path, quoted(text) + " is empty: give a path, or leave the setting out");
    }
    return text;
  }

  private String host(String path) {
    String host = text(path).trim();
    if (host.isEmpty() || host.chars().anyMatch(Character::isWhitespace)) {
      throw error(path, quoted(host) + " is not a host name or address");
    }
    return host;
  }

  private int port(String path) {
    String text = text(path);
    int port = SettingValues.port(text);
    if (port < 0) {
      throw error(path, quoted(text) + " is not a port (0-65535)");
    }
    return port;
  }

  private long size(String path, long min) {
    return size(path, min, SettingValues.LARGEST_SIZE, "");
  }

  /** A size from {@code min} to {@code max} bytes; {@code why} explains the maximum, if it needs to. */
  private long size(String path, long min, long max, String why) {
    String text = text(path);
    if (!SettingValues.isSizeShaped(text)) {
      throw error(path, quoted(text) + SettingValues.SIZE_PROBLEM);
    }
    OptionalLong size = SettingValues.size(text); // empty: past a long
    if (size.isEmpty() || size.getAsLong() > max) {
      throw error(path, quoted(text) + " is too large: must be at most " + SettingValues.sizeText(max) + why);
    }
    if (size.getAsLong() < min) {
      throw error(path, quoted(text) + " is too small: must be at least " + SettingValues.sizeText(min)
          + (SettingValues.isBareSize(text) ? "; a number without a unit is bytes" : ""));
    }
    return size.getAsLong();
  }

  private int whole(String path, int min) {
    return whole(path, min, Integer.MAX_VALUE);
  }

  private int whole(String path, int min, int max) {
    String text = text(path);
    long n;
    try {
      n = Long.parseLong(text.trim());
    } catch (NumberFormatException e) {
      if (!WHOLE.matcher(text).matches()) {
        throw error(path, quoted(text) + " is not a whole number");
      }
      n = text.trim().startsWith("-") ? Long.MIN_VALUE : Long.MAX_VALUE; // digits past a long
    }
    if (n < min) {
      throw error(path, "must be at least " + min);
    }
    if (n > max) {
      throw error(path, "must be at most " + max);
    }
    return (int) n;
  }

  private static final java.util.regex.Pattern WHOLE = java.util.regex.Pattern.compile("\\s*[+-]?[0-9]+\\s*");

  /**
   * The longest duration a setting that ends up on a timer may have. Pekko's scheduler refuses a
   * delay of more than Int.MaxValue ticks of its tick-duration (10 ms): about 248 days
   * (21474835 s); a longer timeout or pause failed every fetch that set it, or the graceful stop.
   * 200 days leaves room for what is added to some of them: the shutdown phase that runs the drain
   * waits drain-timeout + 5 s, a waiter's ask lives its budget + 5 s, the upstream pool's idle
   * timeout is the longer of first-byte-timeout and idle-timeout + 5 s.
   */
  static final Duration LONGEST_TIMER = Duration.ofDays(200);

  /** A duration that is put on a timer (or derives one): at most {@link #LONGEST_TIMER}. */
  private Duration duration(String path, boolean positive) {
    return duration(path, positive, LONGEST_TIMER);
  }

  /**
   * A duration that is only compared with a clock (an age, a TTL), never put on a timer, so it
   * needs no upper limit (HOCON saturates a huge one at about 292 years).
   */
  private Duration comparedDuration(String path, boolean positive) {
    return duration(path, positive, null);
  }

  private Duration duration(String path, boolean positive, Duration longest) {
    String text = text(path);
    if (SettingValues.lacksUnit(text)) {
      throw error(path, SettingValues.notADuration(text));
    }
    Duration d;
    try {
      d = config.getDuration(path);
    } catch (ConfigException e) {
      throw error(path, SettingValues.notADuration(text));
    }
    if (d.isNegative()) {
      throw error(path, "must not be negative");
    }
    if (positive && d.isZero()) {
      throw error(path, "must be more than 0");
    }
    if (longest != null && d.compareTo(longest) > 0) {
      throw error(path, quoted(text) + " is too long: must be at most " + SettingValues.durationText(longest)
          + " (a timer waits no longer)");
    }
    return d;
  }

  private URI url(String path, String text) {
    String problem = SettingValues.urlProblem(text);
    if (problem != null) {
      throw error(path, problem);
    }
    return URI.create(text);
  }

  /** Runs a read, turning the library's own exceptions (such as unresolved substitutions) into ours. */
  private static <T> T hocon(String path, Supplier<T> read) {
    try {
      return read.get();
    } catch (ConfigException e) {
      throw new SettingsException(path, e.getMessage());
    }
  }
}
