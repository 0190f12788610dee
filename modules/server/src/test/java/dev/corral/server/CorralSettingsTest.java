package dev.corral.server;

import dev.corral.http.upstream.AllowedHost;
import dev.corral.http.upstream.Credential;
import dev.corral.http.upstream.UpstreamScope;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.http.ConnectionLimits;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CorralSettingsTest {
  private static final long GiB = 1L << 30;

  @TempDir Path dir;

  private static CorralSettings load(Map<String, String> env, String... args) {
    return CorralSettings.load(args, env);
  }

  private static CorralSettings load(String... args) {
    return load(Map.of(), args);
  }

  private static SettingsException fails(Map<String, String> env, String... args) {
    return assertThrows(SettingsException.class, () -> CorralSettings.load(args, env));
  }

  private static SettingsException fails(String... args) {
    return fails(Map.of(), args);
  }

  private Path file(String name, String contents) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, contents);
    return file;
  }

  private static RepoSettings only(CorralSettings settings) {
    assertEquals(1, settings.repos().size(), settings.repos().toString());
    return settings.repos().get(0);
  }

  // ---- defaults

  @Test
  void defaults() {
    CorralSettings s = load();
    assertEquals("127.0.0.1", s.httpHost());
    assertEquals(8080, s.httpPort());
    assertEquals(Path.of("./data"), s.dataDir());
    assertEquals(10 * GiB, s.maxSizeBytes());
    assertEquals(Optional.empty(), s.adminToken());
    assertEquals(Optional.empty(), s.publicBaseUrl());
    assertEquals(Duration.ofSeconds(30), s.drainTimeout());
    assertEquals(Duration.ofSeconds(120), s.tombstoneTtl());
    assertEquals(List.of(), s.repos());
    assertTrue(s.warnings().stream().anyMatch(w -> w.contains("no repositories")), s.warnings().toString());
    assertEquals(8080, s.raw().getInt("corral.http.port"));
  }

  @Test
  void repoDefaults() {
    RepoSettings r = only(load("--repo", "files=generic:http://127.0.0.1:9/a"));
    assertEquals("files", r.name());
    assertEquals("generic", r.type());
    assertEquals(Duration.ofSeconds(5), r.connectTimeout());
    assertEquals(Duration.ofSeconds(30), r.firstByteTimeout());
    assertEquals(Duration.ofSeconds(30), r.idleTimeout());
    assertEquals(1, r.retries());
    assertEquals(Duration.ofSeconds(1), r.retryBackoff());
    assertEquals(5, r.maxRedirects());
    assertEquals(64, r.maxConnections());
    assertEquals(Duration.ofSeconds(30), r.negativeTtl());
    assertEquals(Duration.ofSeconds(63), r.waiterBudget());
    assertEquals(RepoSettings.OnBudgetExhausted.GATEWAY_TIMEOUT, r.onBudgetExhausted());
    assertEquals(10000, r.maxWaiters());
    assertEquals(16, r.maxOrphanFetches());
    assertEquals(8L << 20, r.inlineLimitBytes());
    assertEquals(Optional.empty(), r.credential());
    assertEquals(Duration.ofMinutes(5), r.metadataTtl());
    assertEquals(Duration.ofHours(24), r.maxStale());
    assertTrue(load("--repo", "files=generic:http://127.0.0.1:9/a").warnings().isEmpty());
  }

  // ---- each flag

  @Test
  void everyFlagIsParsed() throws IOException {
    Path token = file("token", "  s3cret-token\n");
    CorralSettings s = load(
        "--http-host", "0.0.0.0",
        "--http-port", "9090",
        "--data-dir", "/var/cache/corral",
        "--max-size", "3MiB",
        "--repo", "a=generic:http://127.0.0.1:1/x",
        "--repo", "b=npm:https://127.0.0.1:2/",
        "--admin-token-file", token.toString(),
        "--public-base-url", "https://cache.example/corral",
        "--drain-timeout", "5s",
        "--tombstone-ttl", "2m");
    assertEquals("0.0.0.0", s.httpHost());
    assertEquals(9090, s.httpPort());
    assertEquals(Path.of("/var/cache/corral"), s.dataDir());
    assertEquals(3L << 20, s.maxSizeBytes());
    assertEquals(List.of("a", "b"), s.repos().stream().map(RepoSettings::name).toList());
    assertEquals("npm", s.repo("b").orElseThrow().type());
    assertEquals(Optional.of("s3cret-token"), s.adminToken());
    assertEquals(Optional.of(URI.create("https://cache.example/corral")), s.publicBaseUrl());
    assertEquals(Duration.ofSeconds(5), s.drainTimeout());
    assertEquals(Duration.ofMinutes(2), s.tombstoneTtl());
  }

  @Test
  void flagsTakeEqualsForm() {
    CorralSettings s = load("--http-port=1234", "--repo=x=generic:http://127.0.0.1:9/a");
    assertEquals(1234, s.httpPort());
    assertEquals("http://127.0.0.1:9/a", only(s).url());
  }

  @Test
  void configFileFlag() throws IOException {
    Path conf = file("corral.conf", "corral { http.port = 7000, data-dir = \"/srv/c\" }\npekko.loglevel = DEBUG\n");
    CorralSettings s = load("--config", conf.toString());
    assertEquals(7000, s.httpPort());
    assertEquals(Path.of("/srv/c"), s.dataDir());
    assertEquals("DEBUG", s.raw().getString("pekko.loglevel"), "non-corral sections reach raw");
  }

  @Test
  void everyEnvironmentVariableIsRead() throws IOException {
    Path token = file("token", "t");
    Path conf = file("c.conf", "corral.drain-timeout = 7s");
    CorralSettings s = load(Map.of(
        "CORRAL_HTTP_HOST", "::1",
        "CORRAL_HTTP_PORT", "8181",
        "CORRAL_DATA_DIR", "/d",
        "CORRAL_MAX_SIZE", "1GiB",
        "CORRAL_ADMIN_TOKEN_FILE", token.toString(),
        "CORRAL_REPOS", "a=generic:http://127.0.0.1:1/x, b=generic:http://127.0.0.1:2/y\tc=pypi:https://h.example/",
        "CORRAL_CONFIG", conf.toString(),
        "CORRAL_TOMBSTONE_TTL", "10s"));
    assertEquals("::1", s.httpHost());
    assertEquals(8181, s.httpPort());
    assertEquals(Path.of("/d"), s.dataDir());
    assertEquals(GiB, s.maxSizeBytes());
    assertEquals(Optional.of("t"), s.adminToken());
    assertEquals(List.of("a", "b", "c"), s.repos().stream().map(RepoSettings::name).toList());
    assertEquals(Duration.ofSeconds(7), s.drainTimeout());
    assertEquals(Duration.ofSeconds(10), s.tombstoneTtl());
  }

  @Test
  void emptyEnvironmentVariableCountsAsUnset() {
    assertEquals(8080, load(Map.of("CORRAL_HTTP_PORT", "")).httpPort());
  }

  @Test
  void unknownCorralVariableIsOnlyAWarning() {
    CorralSettings s = load(Map.of("CORRAL_HTTP_PROT", "1"), "--repo", "x=generic:http://127.0.0.1:9/");
    assertEquals(List.of("CORRAL_HTTP_PROT is set but is not a Corral setting (see corral help)"), s.warnings());
  }

  @Test
  void theVariablesReadOutsideTheSettingsAreNoWarning() {
    // corral help lists them (CliTest); the log level is logback's, the archive switch the launcher's.
    CorralSettings s = load(Map.of("CORRAL_LOG_LEVEL", "DEBUG", "CORRAL_CDS", "off"),
        "--repo", "x=generic:http://127.0.0.1:9/");
    assertEquals(List.of(), s.warnings());
  }

  // ---- precedence

  @Test
  void precedenceCommandLineOverEnvironmentOverFileOverDefault() throws IOException {
    Path conf = file("p.conf", "corral { http.port = 3000, data-dir = \"/from-file\" }");
    String[] withFile = {"--config", conf.toString()};
    Map<String, String> env = Map.of("CORRAL_HTTP_PORT", "4000", "CORRAL_DATA_DIR", "/from-env");

    assertEquals(8080, load().httpPort());
    assertEquals(Path.of("./data"), load().dataDir());

    assertEquals(3000, load(withFile).httpPort());
    assertEquals(Path.of("/from-file"), load(withFile).dataDir());

    assertEquals(4000, load(env, withFile).httpPort());
    assertEquals(Path.of("/from-env"), load(env, withFile).dataDir());

    CorralSettings all = load(env, "--config", conf.toString(), "--http-port", "5000", "--data-dir", "/from-cli");
    assertEquals(5000, all.httpPort());
    assertEquals(Path.of("/from-cli"), all.dataDir());
    assertEquals(5000, all.raw().getInt("corral.http.port"), "raw is the merged configuration");
  }

  @Test
  void configFlagOverridesConfigVariable() throws IOException {
    Path a = file("a.conf", "corral.http.port = 1");
    Path b = file("b.conf", "corral.http.port = 2");
    assertEquals(2, load(Map.of("CORRAL_CONFIG", a.toString()), "--config", b.toString()).httpPort());
  }

  @Test
  void lastFlagWins() {
    assertEquals(2, load("--http-port", "1", "--http-port", "2").httpPort());
  }

  @Test
  void commandLineRepoOverridesTypeAndUrlButKeepsFileSettings() throws IOException {
    Path conf = file("r.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:1/file\", retries = 4 }");
    RepoSettings r = only(load(Map.of("CORRAL_REPOS", "x=generic:http://127.0.0.1:2/env"),
        "--config", conf.toString(), "--repo", "x=generic:http://127.0.0.1:3/cli"));
    assertEquals("http://127.0.0.1:3/cli", r.url());
    assertEquals(4, r.retries());
  }

  // ---- repositories

  @Test
  void repoUrlIsEverythingAfterTheTypesColon() {
    RepoSettings r = only(load("--repo", "x=generic:http://127.0.0.1:9/a"));
    assertEquals("x", r.name());
    assertEquals("generic", r.type());
    assertEquals("http://127.0.0.1:9/a", r.url());

    RepoSettings q = only(load("--repo", "my.repo_1-b=maven:https://[::1]:8443/m2/x:y/a=b:c"));
    assertEquals("my.repo_1-b", q.name());
    assertEquals("maven", q.type());
    assertEquals("https://[::1]:8443/m2/x:y/a=b:c", q.url());
  }

  @Test
  void repoNameWithDotsRoundTripsThroughHocon() throws IOException {
    Path conf = file("d.conf", "corral.repos.\"npm.internal\".retries = 3");
    RepoSettings r = only(load("--config", conf.toString(), "--repo", "npm.internal=npm:http://127.0.0.1:9/"));
    assertEquals("npm.internal", r.name());
    assertEquals(3, r.retries());
  }

  @Test
  void duplicateRepoNamesOnTheCommandLine() {
    SettingsException e = fails("--repo", "x=generic:http://127.0.0.1:1/", "--repo", "x=generic:http://127.0.0.1:2/");
    assertEquals("--repo \"x=generic:http://127.0.0.1:2/\": repository \"x\" is given twice", e.getMessage());
  }

  @Test
  void duplicateRepoNamesInTheEnvironment() {
    SettingsException e = fails(Map.of("CORRAL_REPOS", "x=generic:http://127.0.0.1:1/,x=generic:http://127.0.0.1:2/"));
    assertTrue(e.getMessage().startsWith("CORRAL_REPOS \"x=generic:http://127.0.0.1:2/\": repository \"x\" is given twice"), e.getMessage());
  }

  @Test
  void reposFromAFileOnly() throws IOException {
    Path conf = file("f.conf", """
        corral.repos {
          b { type = generic, url = "https://127.0.0.1:2/" }
          a { type = go, url = "http://127.0.0.1:1/", on-budget-exhausted = bypass }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    assertEquals(List.of("a", "b"), s.repos().stream().map(RepoSettings::name).toList(), "sorted by name");
    assertEquals(RepoSettings.OnBudgetExhausted.BYPASS, s.repo("a").orElseThrow().onBudgetExhausted());
  }

  @Test
  void perRepoOverridesAndRepoDefaultsInAConfigFile() throws IOException {
    Path conf = file("o.conf", """
        corral {
          repo-defaults { retries = 3, max-connections = 8 }
          repos {
            slow {
              type = generic
              url = "http://127.0.0.1:9/slow"
              connect-timeout = 2s
              first-byte-timeout = 2m
              max-connections = 2
              inline-limit = 1KiB
            }
            fast { type = generic, url = "http://127.0.0.1:9/fast", waiter-budget = 500ms }
          }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    RepoSettings slow = s.repo("slow").orElseThrow();
    assertEquals(Duration.ofSeconds(2), slow.connectTimeout());
    assertEquals(Duration.ofMinutes(2), slow.firstByteTimeout());
    assertEquals(2, slow.maxConnections());
    assertEquals(3, slow.retries());
    assertEquals(1024, slow.inlineLimitBytes());
    assertEquals(Duration.ofSeconds(243), slow.waiterBudget(), "2 x 2m + 3s");

    RepoSettings fast = s.repo("fast").orElseThrow();
    assertEquals(8, fast.maxConnections());
    assertEquals(Duration.ofSeconds(5), fast.connectTimeout());
    assertEquals(Duration.ofMillis(500), fast.waiterBudget());
  }

  @Test
  void freshnessAndNegativeTtlPerRepoAndInRepoDefaults() throws IOException {
    Path conf = file("f.conf", """
        corral {
          repo-defaults { metadata-ttl = 1m, max-stale = 2h, negative-ttl = 10s }
          repos {
            own { type = generic, url = "http://127.0.0.1:9/own", metadata-ttl = 0s, max-stale = 0s, negative-ttl = 0s }
            shared { type = generic, url = "http://127.0.0.1:9/shared" }
          }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    RepoSettings own = s.repo("own").orElseThrow();
    assertEquals(Duration.ZERO, own.metadataTtl());
    assertEquals(Duration.ZERO, own.maxStale());
    assertEquals(Duration.ZERO, own.negativeTtl());
    RepoSettings shared = s.repo("shared").orElseThrow();
    assertEquals(Duration.ofMinutes(1), shared.metadataTtl());
    assertEquals(Duration.ofHours(2), shared.maxStale());
    assertEquals(Duration.ofSeconds(10), shared.negativeTtl());
    var policy = CorralServer.policy(shared);
    assertEquals(Duration.ofMinutes(1), policy.metadataTtl());
    assertEquals(Duration.ofHours(2), policy.maxStale());
    assertEquals(Duration.ofSeconds(10), policy.negativeTtl());
  }

  @Test
  void maxAgeUnusedIsOffByDefaultSetPerRepoOrInRepoDefaultsAndNeedsAUnit() throws IOException {
    Path conf = file("c.conf", """
        corral {
          repo-defaults { max-age-unused = 30d }
          repos {
            own { type = generic, url = "http://127.0.0.1:9/own", max-age-unused = 12h }
            shared { type = generic, url = "http://127.0.0.1:9/shared" }
          }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    assertEquals(Duration.ofHours(12), s.repo("own").orElseThrow().maxAgeUnused());
    assertEquals(Duration.ofDays(30), s.repo("shared").orElseThrow().maxAgeUnused());
    assertEquals(Duration.ZERO, load("--repo", "x=generic:http://127.0.0.1:9/").repo("x").orElseThrow().maxAgeUnused());
    Path bad = file("b.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-age-unused = 30 }");
    assertEquals("corral.repos.x.max-age-unused", fails("--config", bad.toString()).setting());
    Path negative = file("m.conf", "corral.repo-defaults.max-age-unused = -1d");
    assertEquals("corral.repo-defaults.max-age-unused",
        fails("--config", negative.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
  }

  /** max-age-unused = 1ms removed the repository's whole store within seconds of the start. */
  @Test
  void maxAgeUnusedIsAtLeastASecondOrZero() throws IOException {
    for (String age : List.of("1ms", "999ms")) {
      Path conf = file("a.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-age-unused = " + age + " }");
      assertEquals("corral.repos.x.max-age-unused: \"" + age + "\" is too short: must be at least 1s, or 0s for never"
          + " (the sweep runs at most every second) (a.conf line 1)",
          fails("--config", conf.toString()).getMessage().replace(dir + "/", ""), age);
    }
    Path defaults = file("d.conf", "corral.repo-defaults.max-age-unused = 1ms");
    assertEquals("corral.repo-defaults.max-age-unused",
        fails("--config", defaults.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
    Path second = file("m.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-age-unused = 1s }");
    assertEquals(Duration.ofSeconds(1), only(load("--config", second.toString())).maxAgeUnused());
    Path never = file("n.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-age-unused = 0s }");
    assertEquals(Duration.ZERO, only(load("--config", never.toString())).maxAgeUnused());
  }

  @Test
  void aNegativeMetadataTtlIsRejected() throws IOException {
    Path conf = file("n.conf", "corral.repo-defaults.metadata-ttl = -1s");
    assertEquals("corral.repo-defaults.metadata-ttl",
        fails("--config", conf.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
  }

  @Test
  void waiterBudgetDerivedFromFirstByteTimeout() throws IOException {
    Path conf = file("w.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", first-byte-timeout = 10s }");
    assertEquals(Duration.ofSeconds(23), only(load("--config", conf.toString())).waiterBudget());
    assertEquals(Duration.ofSeconds(29), RepoSettings.defaultWaiterBudget(Duration.ofSeconds(13)));
  }

  @Test
  void waiterBudgetInRepoDefaultsAppliesToAll() throws IOException {
    Path conf = file("w.conf", "corral.repo-defaults.waiter-budget = 9s");
    assertEquals(Duration.ofSeconds(9), only(load("--config", conf.toString(), "--repo", "x=generic:http://127.0.0.1:9/")).waiterBudget());
  }

  @Test
  void unknownPerRepoKeyIsRejected() throws IOException {
    Path conf = file("typo.conf", "corral.repos.foo {\n  type = generic\n  url = \"http://127.0.0.1:9/\"\n  conect-timeout = 2s\n}\n");
    SettingsException e = fails("--config", conf.toString());
    assertEquals("corral.repos.foo.conect-timeout", e.setting());
    assertTrue(e.getMessage().contains("unknown setting"), e.getMessage());
    assertTrue(e.getMessage().contains("typo.conf line 4"), e.getMessage());
  }

  @Test
  void unknownRepoDefaultsKeyIsRejected() throws IOException {
    Path conf = file("typo.conf", "corral.repo-defaults.retry = 2");
    assertEquals("corral.repo-defaults.retry", fails("--config", conf.toString()).setting());
  }

  @Test
  void unknownNodeKeyIsRejected() throws IOException {
    Path conf = file("typo.conf", "corral.http.prot = 2");
    assertEquals("corral.http.prot", fails("--config", conf.toString()).setting());
    Path conf2 = file("typo2.conf", "corral.datadir = x");
    assertEquals("corral.datadir", fails("--config", conf2.toString()).setting());
    Path conf3 = file("typo3.conf", "corral.http = 8080");
    assertTrue(fails("--config", conf3.toString()).getMessage().startsWith("corral.http: expected an object"));
  }

  @Test
  void repoWithoutUrlInAFile() throws IOException {
    Path conf = file("nourl.conf", "corral.repos.foo.type = generic");
    assertEquals("corral.repos.foo.url: missing", fails("--config", conf.toString()).getMessage());
  }

  // ---- groups (issue 16)

  @Test
  void aGroupOnTheCommandLineAndInAFile() throws IOException {
    CorralSettings cli = load("--repo", "a=maven:http://127.0.0.1:9/a/", "--repo", "b=maven:http://127.0.0.1:9/b/",
        "--repo", "all=group:b,a");
    RepoSettings all = cli.repos().stream().filter(r -> r.name().equals("all")).findFirst().orElseThrow();
    assertTrue(all.isGroup());
    assertEquals(List.of("b", "a"), all.members());
    assertEquals("", all.url());
    Path conf = file("group.conf", "corral.repos {\n  a { type = npm, url = \"http://127.0.0.1:9/\" }\n"
        + "  b { type = npm, url = \"http://127.0.0.1:8/\" }\n  g { type = group, members = [a, b] }\n}\n");
    RepoSettings g = load("--config", conf.toString()).repos().stream().filter(r -> r.name().equals("g"))
        .findFirst().orElseThrow();
    assertEquals(List.of("a", "b"), g.members());
  }

  @Test
  void aGroupInTheEnvironmentKeepsItsCommaSeparatedMembers() {
    CorralSettings env = load(Map.of("CORRAL_REPOS",
        "a=pypi:http://127.0.0.1:9/simple/,b=pypi:http://127.0.0.1:8/simple/ g=group:a,b,c=generic:http://127.0.0.1:7/"));
    assertEquals(4, env.repos().size(), env.repos().toString());
    RepoSettings g = env.repos().stream().filter(r -> r.name().equals("g")).findFirst().orElseThrow();
    assertEquals(List.of("a", "b"), g.members());
  }

  @Test
  void groupSettingErrors() throws IOException {
    String a = "a=generic:http://127.0.0.1:9/";
    String b = "b=generic:http://127.0.0.1:8/";
    assertEquals("--repo \"g=group:a,zz\": no repository called \"zz\" is configured",
        fails("--repo", a, "--repo", "g=group:a,zz").getMessage());
    assertEquals("--repo \"g=group:a,a\": \"a\" is listed twice",
        fails("--repo", a, "--repo", "g=group:a,a").getMessage());
    assertEquals("--repo \"g=group:a,g\": a group cannot be its own member",
        fails("--repo", a, "--repo", "g=group:a,g").getMessage());
    assertEquals("--repo \"h=group:g,b\": \"g\" is a group: a group cannot be a member of a group",
        fails("--repo", a, "--repo", b, "--repo", "g=group:a", "--repo", "h=group:g,b").getMessage());
    assertEquals("--repo \"g=group:a,n\": members must be of one type: \"a\" is generic, \"n\" is npm",
        fails("--repo", a, "--repo", "n=npm:http://127.0.0.1:7/", "--repo", "g=group:a,n").getMessage());
    assertTrue(fails("--repo", "o=oci:http://127.0.0.1:7/", "--repo", "g=group:o").getMessage()
        .contains("oci groups are not served yet"));
    assertEquals("--repo \"g=group:a,\": empty repository name in the list",
        fails("--repo", a, "--repo", "g=group:a,").getMessage());
    Path noMembers = file("nomembers.conf", "corral.repos.g.type = group");
    assertTrue(fails("--config", noMembers.toString()).getMessage().startsWith("corral.repos.g: a group needs its members"));
    Path withUrl = file("withurl.conf", "corral.repos { a { type = generic, url = \"http://127.0.0.1:9/\" }\n"
        + " g { type = group, members = [a], url = \"http://127.0.0.1:9/\" } }");
    SettingsException e = fails("--config", withUrl.toString());
    assertEquals("corral.repos.g.url", e.setting());
    assertTrue(e.getMessage().contains("a group has no url of its own"), e.getMessage());
    Path membersElsewhere = file("members.conf", "corral.repos.a { type = generic, url = \"http://127.0.0.1:9/\", members = [b] }");
    assertEquals("corral.repos.a.members", fails("--config", membersElsewhere.toString()).setting());
    Path emptyList = file("empty.conf", "corral.repos.g { type = group, members = [] }");
    assertTrue(fails("--config", emptyList.toString()).getMessage().contains("at least one member"));
  }

  // ---- errors naming the setting

  @Test
  void badPortNamesTheFlag() {
    assertEquals("--http-port: \"abc\" is not a port (0-65535)", fails("--http-port", "abc").getMessage());
    assertEquals("--http-port: \"65536\" is not a port (0-65535)", fails("--http-port", "65536").getMessage());
  }

  @Test
  void badPortNamesTheVariableOrPath() throws IOException {
    assertEquals("CORRAL_HTTP_PORT: \"-1\" is not a port (0-65535)", fails(Map.of("CORRAL_HTTP_PORT", "-1")).getMessage());
    Path conf = file("port.conf", "corral.http.port = eighty");
    SettingsException e = fails("--config", conf.toString());
    assertTrue(e.getMessage().startsWith("corral.http.port: \"eighty\" is not a port (0-65535)"), e.getMessage());
  }

  @Test
  void badSizeNamesTheSetting() {
    assertEquals("CORRAL_MAX_SIZE: \"10XB\" is not a size (bytes, or with KiB, MiB, GiB, TiB)",
        fails(Map.of("CORRAL_MAX_SIZE", "10XB")).getMessage());
    assertEquals("--max-size", fails("--max-size", "10GB").setting());
    assertEquals("--max-size", fails("--max-size", "0").setting());
  }

  @ParameterizedTest
  @CsvSource({"1024, 1024", "1KiB, 1024", "3 MiB, 3145728", "10GiB, 10737418240", "2gib, 2147483648", "1TiB, 1099511627776", "5B, 5"})
  void sizes(String text, long bytes) {
    assertEquals(bytes, load("--memory-cache-size", text).memoryCacheBytes());
    if (bytes >= 1 << 20) {
      assertEquals(bytes, load("--max-size", text).maxSizeBytes());
    }
  }

  /** A number without a unit is bytes: --max-size 10 (meant as 10 GiB) emptied the whole cache at the start. */
  @Test
  void maxSizeIsAtLeast1MiB() throws IOException {
    assertEquals("--max-size: \"10\" is too small: must be at least 1 MiB; a number without a unit is bytes",
        fails("--max-size", "10").getMessage());
    assertEquals("--max-size: \"0\" is too small: must be at least 1 MiB; a number without a unit is bytes",
        fails("--max-size", "0").getMessage());
    assertEquals("CORRAL_MAX_SIZE: \"1048575\" is too small: must be at least 1 MiB; a number without a unit is bytes",
        fails(Map.of("CORRAL_MAX_SIZE", "1048575")).getMessage());
    assertEquals("--max-size: \"512 KiB\" is too small: must be at least 1 MiB", fails("--max-size", "512 KiB").getMessage());
    Path conf = file("s.conf", "corral.max-size = 500");
    assertEquals("corral.max-size: \"500\" is too small: must be at least 1 MiB; a number without a unit is bytes"
        + " (s.conf line 1)", fails("--config", conf.toString()).getMessage().replace(dir + "/", ""));
    assertEquals(1L << 20, load("--max-size", "1048576").maxSizeBytes());
    assertEquals(1L << 20, load("--max-size", "1MiB").maxSizeBytes());
  }

  /**
   * inline-limit had no upper limit: a body up to it is collected whole on the heap, so 4GiB ran
   * a node with a small heap out of memory on a large download.
   */
  @Test
  void inlineLimitIsAtMost64MiB() throws IOException {
    for (String limit : List.of("67108865", "65 MiB", "4GiB", "1TiB")) {
      Path conf = file("i.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", inline-limit = \""
          + limit + "\" }");
      assertEquals("corral.repos.x.inline-limit: \"" + limit + "\" is too large: must be at most 64 MiB (a body up to"
          + " it is held whole in memory while it downloads) (i.conf line 1)",
          fails("--config", conf.toString()).getMessage().replace(dir + "/", ""), limit);
    }
    Path defaults = file("d.conf", "corral.repo-defaults.inline-limit = 4GiB");
    assertEquals("corral.repo-defaults.inline-limit",
        fails("--config", defaults.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
    Path most = file("m.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", inline-limit = 64MiB }");
    assertEquals(64L << 20, only(load("--config", most.toString())).inlineLimitBytes());
    Path none = file("n.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", inline-limit = 0 }");
    assertEquals(0, only(load("--config", none.toString())).inlineLimitBytes());
  }

  /** A size past a long said it "is not a size (use KiB, MiB, GiB)", a hint without TiB or bytes. */
  @Test
  void aSizeTooLargeSaysSoAndTheHintNamesEveryUnit() {
    assertEquals("--max-size: \"8388608 TiB\" is too large: must be at most 8388607 TiB",
        fails("--max-size", "8388608 TiB").getMessage());
    assertEquals("--max-size: \"9223372036854775807\" is too large: must be at most 8388607 TiB",
        fails("--max-size", "9223372036854775807").getMessage());
    assertEquals("--memory-cache-size: \"99999999999999999999 GiB\" is too large: must be at most 8388607 TiB",
        fails("--memory-cache-size", "99999999999999999999 GiB").getMessage());
    assertEquals(8388607L << 40, load("--max-size", "8388607 TiB").maxSizeBytes());
    assertEquals("--max-size: \"10 PiB\" is not a size (bytes, or with KiB, MiB, GiB, TiB)",
        fails("--max-size", "10 PiB").getMessage());
  }

  @Test
  void badDurationNamesTheSetting() throws IOException {
    assertEquals("--drain-timeout: \"soon\" is not a duration (e.g. 500ms, 5s, 2m)", fails("--drain-timeout", "soon").getMessage());
    assertEquals("--tombstone-ttl: \"30\" is not a duration (add a unit, e.g. 500ms, 5s, 2m)", fails("--tombstone-ttl", "30").getMessage());
    Path conf = file("dur.conf", "corral.repos.foo { type = generic, url = \"http://127.0.0.1:9/\", connect-timeout = fast }");
    SettingsException e = fails("--config", conf.toString());
    assertEquals("corral.repos.foo.connect-timeout", e.setting());
    assertTrue(e.getMessage().contains("\"fast\" is not a duration"), e.getMessage());
    Path zero = file("zero.conf", "corral.repo-defaults.first-byte-timeout = 0s");
    assertEquals("corral.repo-defaults.first-byte-timeout: must be more than 0 (zero.conf line 1)",
        fails("--config", zero.toString(), "--repo", "x=generic:http://127.0.0.1:9/").getMessage().replace(dir + "/", ""));
  }

  /**
   * HOCON reads a number without a unit as milliseconds, in more forms than "30": "+1" as a
   * header-read timeout answered every connection with nothing.
   */
  @Test
  void aDurationWithoutAUnitLetterIsRefusedInEveryNumberForm() throws IOException {
    for (String bare : List.of("+1", ".5", "30.", "1e3", "-5", "+1.5")) {
      assertEquals("--header-read-timeout: \"" + bare + "\" is not a duration (add a unit, e.g. 500ms, 5s, 2m)",
          fails("--header-read-timeout", bare).getMessage(), bare);
      assertEquals("CORRAL_DRAIN_TIMEOUT", fails(Map.of("CORRAL_DRAIN_TIMEOUT", bare)).setting(), bare);
    }
    Path conf = file("plus.conf", "corral.repo-defaults.first-byte-timeout = \"+30\"");
    assertEquals("corral.repo-defaults.first-byte-timeout: \"+30\" is not a duration (add a unit, e.g. 500ms, 5s, 2m)"
        + " (plus.conf line 1)", fails("--config", conf.toString(), "--repo", "x=generic:http://127.0.0.1:9/")
        .getMessage().replace(dir + "/", ""));
    Path rule = file("rule.conf", "corral.repos.g { type = generic, url = \"http://127.0.0.1:1/\","
        + " freshness = [ { path = \"a\", ttl = \"1e3\" } ] }");
    assertEquals("corral.repos.g.freshness: rule 1: ttl: \"1e3\" is not a duration (add a unit, e.g. 500ms, 5s, 2m)"
        + " (rule.conf line 1)", fails("--config", rule.toString()).getMessage().replace(dir + "/", ""));
    assertEquals(Duration.ofMillis(1500), load("--header-read-timeout", "1.5s").connections().headerReadTimeout());
    assertEquals(Duration.ofSeconds(5), load("--header-read-timeout", "5 s").connections().headerReadTimeout());
  }

  /**
   * Pekko's scheduler takes no delay past Int.MaxValue ticks of 10 ms (about 248 days): a longer
   * timeout, pause or budget failed every fetch that set it, or the graceful stop. Durations that
   * are only compared with a clock keep no upper limit.
   */
  @Test
  void durationsThatGoOnATimerAreAtMost200Days() throws IOException {
    assertTrue(SettingsReader.LONGEST_TIMER.plusSeconds(5).toMillis() < Integer.MAX_VALUE * 10L,
        "with what is added to some of them, within the scheduler's Int.MaxValue ticks of 10 ms");
    String tooLong = "\"201d\" is too long: must be at most 200d (a timer waits no longer)";
    for (String flag : List.of("--drain-timeout", "--header-read-timeout", "--idle-timeout", "--peer-wait-bound")) {
      assertEquals(flag + ": " + tooLong, fails(flag, "201d").getMessage());
      load(flag, "200d");
    }
    assertEquals("--drain-timeout: \"21474836s\" is too long: must be at most 200d (a timer waits no longer)",
        fails("--drain-timeout", "21474836s").getMessage());
    for (String key : List.of("connect-timeout", "first-byte-timeout", "idle-timeout", "retry-backoff", "waiter-budget")) {
      Path conf = file("t.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", " + key + " = 201d }");
      assertEquals("corral.repos.x." + key + ": " + tooLong + " (t.conf line 1)",
          fails("--config", conf.toString()).getMessage().replace(dir + "/", ""), key);
    }
    // The budget derived from the first-byte timeout (2 x + 3s) goes on a timer too.
    Path derived = file("d.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", first-byte-timeout = 100d }");
    assertEquals("corral.repos.x.first-byte-timeout: \"100d\" is too long without a waiter-budget: the budget it"
        + " makes, 2 x first-byte-timeout + 3s, must be at most 200d (a timer waits no longer); set waiter-budget,"
        + " or a shorter first-byte-timeout (d.conf line 1)", fails("--config", derived.toString()).getMessage().replace(dir + "/", ""));
    Path ownBudget = file("b.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", first-byte-timeout = 100d,"
        + " waiter-budget = 200d }");
    assertEquals(Duration.ofDays(200), only(load("--config", ownBudget.toString())).waiterBudget());
    Path longest = file("e.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\","
        + " first-byte-timeout = 8639998s }");
    assertEquals(Duration.ofSeconds(17_279_999), only(load("--config", longest.toString())).waiterBudget());
    Path past = file("p.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\","
        + " first-byte-timeout = 8639999s }");
    assertEquals("corral.repos.x.first-byte-timeout", fails("--config", past.toString()).setting());
    // The retry pause doubles before each further retry (up to 1024 x): its last one must fit too.
    Path backoff = file("r.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", retries = 12,"
        + " retry-backoff = 1d }");
    assertEquals("corral.repos.x.retry-backoff: \"1d\" is too long for 12 retries: the pause doubles before each"
        + " further retry, to 1024 x it; must be at most 16875s (a timer waits no longer than 200d), or fewer retries"
        + " (r.conf line 1)", fails("--config", backoff.toString()).getMessage().replace(dir + "/", ""));
    Path fits = file("f.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", retries = 3,"
        + " retry-backoff = 50d }");
    assertEquals(Duration.ofDays(50), only(load("--config", fits.toString())).retryBackoff(), "50d, 100d, 200d");
    Path over = file("o.conf", "corral.repo-defaults { retries = 4, retry-backoff = 50d }");
    assertEquals("corral.repo-defaults.retry-backoff",
        fails("--config", over.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting(), "50d, 100d, 200d, 400d");
    // Compared with a clock only: no upper limit.
    Path compared = file("c.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", negative-ttl = 1000d,"
        + " metadata-ttl = 1000d, max-stale = 1000d, max-age-unused = 1000d }");
    RepoSettings r = only(load("--config", compared.toString()));
    assertEquals(Duration.ofDays(1000), r.negativeTtl());
    assertEquals(Duration.ofDays(1000), r.metadataTtl());
    assertEquals(Duration.ofDays(1000), r.maxStale());
    assertEquals(Duration.ofDays(1000), r.maxAgeUnused());
    assertEquals(Duration.ofDays(1000), load("--tombstone-ttl", "1000d").tombstoneTtl());
  }

  @Test
  void badRepoNameNamesTheFlagValue() {
    assertEquals("--repo \"Bad=generic:http://127.0.0.1:9\": name must match [a-z0-9][a-z0-9._-]*",
        fails("--repo", "Bad=generic:http://127.0.0.1:9").getMessage());
    assertEquals("--repo \"-a=generic:http://127.0.0.1:9\"", fails("--repo", "-a=generic:http://127.0.0.1:9").setting());
  }

  @Test
  void badRepoNameInAFile() throws IOException {
    Path conf = file("n.conf", "corral.repos.Foo { type = generic, url = \"http://127.0.0.1:9/\" }");
    assertEquals("corral.repos.Foo", fails("--config", conf.toString()).setting());
  }

  @Test
  void badRepoType() throws IOException {
    assertEquals("--repo \"x=ftp:http://127.0.0.1/\": unknown type \"ftp\" (known: generic, npm, maven, pypi, go, oci, group); expected NAME=TYPE:URL",
        fails("--repo", "x=ftp:http://127.0.0.1/").getMessage());
    Path conf = file("t.conf", "corral.repos.x { type = rubygems, url = \"http://127.0.0.1:9/\" }");
    assertEquals("corral.repos.x.type", fails("--config", conf.toString()).setting());
  }

  /** Issue 12: a rejected repository URL's password was echoed on stderr. */
  @Test
  void aRejectedRepoUrlNeverShowsItsSecrets() throws IOException {
    for (SettingsException e : List.of(
        fails("--repo", "x=generic:http://:s3cr3t-pw@127.0.0.1/"),
        fails("--repo", "x=generic:ftp://u:s3cr3t-pw@127.0.0.1/?sig=s3cr3t-sig"),
        fails("--repo", "x=nope:http://u:s3cr3t-pw@127.0.0.1/"),
        fails(Map.of("CORRAL_REPOS", "x=generic:http://u:s3cr3t-pw@127.0.0.1/")),
        fails("http://u:s3cr3t-pw@127.0.0.1/"))) {
      String shown = e.setting() + " " + e.getMessage();
      assertFalse(shown.contains("s3cr3t"), shown);
      assertTrue(shown.contains("***"), shown);
    }
    Path conf = file("pw.conf", "corral.repos.x { type = generic, url = \"ftp://u:s3cr3t-pw@127.0.0.1/\" }");
    SettingsException e = fails("--config", conf.toString());
    assertFalse(e.getMessage().contains("s3cr3t"), e.getMessage());
  }

  @Test
  void badRepoUrl() throws IOException {
    assertEquals("--repo \"x=generic:ftp://127.0.0.1/\": \"ftp://127.0.0.1/\" is not an absolute http or https URL with a host",
        fails("--repo", "x=generic:ftp://127.0.0.1/").getMessage());
    assertEquals("--repo \"x=generic:/relative\"", fails("--repo", "x=generic:/relative").setting());
    assertEquals("--repo \"x=generic:http:///nohost\"", fails("--repo", "x=generic:http:///nohost").setting());
    assertTrue(fails("--repo", "x=generic:http://:secret@127.0.0.1/").getMessage().contains("user info"));
    assertEquals("CORRAL_REPOS \"x=generic:nope\"", fails(Map.of("CORRAL_REPOS", "x=generic:nope")).setting());
    Path conf = file("u.conf", "corral.repos.x { type = generic, url = \"127.0.0.1:9\" }");
    assertEquals("corral.repos.x.url", fails("--config", conf.toString()).setting());
  }

  /**
   * The request's path is appended to the URL: after "#frag" every path asked the upstream's root
   * and its body was cached under every key. Port 99999 was accepted and every request failed.
   */
  @Test
  void anUpstreamOrPublicUrlHasNoQueryNoFragmentAndAPortFrom1To65535() throws IOException {
    assertEquals("--repo \"x=generic:http://127.0.0.1:39600/#frag\": \"http://127.0.0.1:39600/#frag\" has a fragment"
        + " (#...): the request's path is appended to this URL, so it must end with its path",
        fails("--repo", "x=generic:http://127.0.0.1:39600/#frag").getMessage());
    assertEquals("--repo \"x=generic:http://127.0.0.1:39600/?***\": \"http://127.0.0.1:39600/?***\" has a query (?...):"
        + " the request's path is appended to this URL, so it must end with its path",
        fails("--repo", "x=generic:http://127.0.0.1:39600/?sig=s3cret").getMessage());
    assertTrue(fails("--repo", "x=npm:http://127.0.0.1:39600/npm?").getMessage().contains("has a query"));
    assertTrue(fails("--repo", "x=npm:http://127.0.0.1:39600/npm#").getMessage().contains("has a fragment"));
    assertEquals("--repo \"x=generic:http://127.0.0.1:99999/\": \"http://127.0.0.1:99999/\" has port 99999: a port is"
        + " between 1 and 65535", fails("--repo", "x=generic:http://127.0.0.1:99999/").getMessage());
    assertTrue(fails("--repo", "x=generic:http://127.0.0.1:0/").getMessage().contains("has port 0"));
    assertTrue(fails(Map.of("CORRAL_REPOS", "x=generic:http://127.0.0.1:65536/")).getMessage().contains("has port 65536"));
    Path file = file("u.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:39600/a#frag\" }");
    assertEquals("corral.repos.x.url", fails("--config", file.toString()).setting());
    assertEquals("--public-base-url: \"https://127.0.0.1:8443/c?***\" has a query (?...): the request's path is appended"
        + " to this URL, so it must end with its path", fails("--public-base-url", "https://127.0.0.1:8443/c?a=b").getMessage());
    assertEquals("--public-base-url", fails("--public-base-url", "https://127.0.0.1:8443/#top").setting());
    Path sumdb = file("s.conf", "corral.repos.g { type = go, url = \"http://127.0.0.1:9/g\", sumdb-url = \"http://127.0.0.1:8/db?x\" }");
    assertEquals("corral.repos.g.sumdb-url", fails("--config", sumdb.toString()).setting());
    // The query a generic repository sends upstream is its own setting, beside the URL.
    Path query = file("q.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:65535/files\", query = drop }");
    assertEquals("http://127.0.0.1:65535/files", only(load("--config", query.toString())).url());
    assertEquals("http://127.0.0.1:1/", only(load("--repo", "x=generic:http://127.0.0.1:1/")).url());
  }

  @Test
  void repoSpecWithoutTypeOrEquals() {
    assertEquals("--repo \"x\": expected NAME=TYPE:URL", fails("--repo", "x").getMessage());
    assertEquals("--repo \"x=generic\": expected NAME=TYPE:URL", fails("--repo", "x=generic").getMessage());
  }

  @Test
  void unknownFlagMissingValueAndStrayArgument() {
    assertEquals("--http-prot: unknown option (see corral help)", fails("--http-prot", "1").getMessage());
    assertEquals("--http-port: missing value (PORT)", fails("--http-port").getMessage());
    assertEquals("--data-dir: missing value (DIR)", fails("--data-dir", "--http-port", "1").getMessage());
    assertEquals("\"extra\"", fails("extra").setting());
  }

  @Test
  void badBudgetPolicy() throws IOException {
    Path conf = file("b.conf", "corral.repo-defaults.on-budget-exhausted = retry");
    assertEquals("corral.repo-defaults.on-budget-exhausted", fails("--config", conf.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
  }

  @Test
  void badWholeNumber() throws IOException {
    Path conf = file("n.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-connections = 0 }");
    assertEquals("corral.repos.x.max-connections: must be at least 1 (n.conf line 1)",
        fails("--config", conf.toString()).getMessage().replace(dir + "/", ""));
    Path conf2 = file("n2.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", retries = lots }");
    assertTrue(fails("--config", conf2.toString()).getMessage().startsWith("corral.repos.x.retries: \"lots\" is not a whole number"));
  }

  /**
   * A repository's max-connections had no upper limit: 300000000 overflowed the pool's buffer
   * size and stopped the start with a stack trace, 100000000 ran the node out of memory at the
   * first request.
   */
  @Test
  void aRepositorysMaxConnectionsIsAtMost65536() throws IOException {
    for (String n : List.of("65537", "100000000", "300000000", "3000000000")) {
      Path conf = file("m.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-connections = " + n + " }");
      assertEquals("corral.repos.x.max-connections: must be at most 65536 (m.conf line 1)",
          fails("--config", conf.toString()).getMessage().replace(dir + "/", ""), n);
    }
    Path defaults = file("d.conf", "corral.repo-defaults.max-connections = 100000000");
    assertEquals("corral.repo-defaults.max-connections",
        fails("--config", defaults.toString(), "--repo", "x=generic:http://127.0.0.1:9/").setting());
    Path most = file("o.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", max-connections = 65536 }");
    RepoSettings r = only(load("--config", most.toString()));
    assertEquals(SettingsReader.MAX_UPSTREAM_CONNECTIONS, r.maxConnections());
    assertEquals(4 * 65536, CorralServer.upstreamSettings(r).maxOpenRequests(), "the pool's buffer: 4 x, a power of two");
  }

  /** A whole number too large for an int said "is not a whole number". */
  @Test
  void aWholeNumberPastAnIntSaysHowLargeItMayBe() throws IOException {
    assertEquals("--max-connections: must be at most 1000000", fails("--max-connections", "3000000000").getMessage());
    assertEquals("CORRAL_MAX_CONNECTIONS: must be at least 1",
        fails(Map.of("CORRAL_MAX_CONNECTIONS", "-3000000000")).getMessage());
    assertEquals("--max-connections: must be at most 1000000",
        fails("--max-connections", "99999999999999999999999").getMessage());
    Path conf = file("r.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/\", retries = 3000000000 }");
    assertEquals("corral.repos.x.retries: must be at most 2147483647 (r.conf line 1)",
        fails("--config", conf.toString()).getMessage().replace(dir + "/", ""));
    assertEquals("--max-connections: \"3e9\" is not a whole number", fails("--max-connections", "3e9").getMessage());
    assertEquals(1_000_000, load("--max-connections", "+1000000").connections().maxConnections());
  }

  /**
   * A seed node's host went into pekko://corral@HOST:PORT unchecked but for whitespace, / and @:
   * ::1:39530 or a#b:39530 stopped the start with Pekko's bare RuntimeException.
   */
  @Test
  void seedNodesAreHostNamesIpv4OrBracketedIpv6WithAPort() throws IOException {
    List<String> good = List.of("h1:1", "127.0.0.1:25520", "[::1]:25520", "[2001:db8::7]:65535",
        "corral-0.corral.default.svc.cluster.local:25520", "Node-1.Example:2");
    assertEquals(good, load("--seed-nodes", String.join(",", good)).cluster().seedNodes());
    for (String seed : good) {
      org.apache.pekko.actor.Address address = org.apache.pekko.actor.AddressFromURIString.parse("pekko://corral@" + seed);
      assertTrue(address.hasGlobalScope(), seed);
    }
    for (String seed : List.of("::1:39530", "a#b:39530")) {
      assertThrows(Exception.class, () -> org.apache.pekko.actor.AddressFromURIString.parse("pekko://corral@" + seed),
          "what Pekko did with " + seed);
    }
    assertEquals("--seed-nodes: \"::1:39530\" is not HOST:PORT (a seed node's cluster host and port): \"::1\" is not a"
        + " host name, an IPv4 address or an IPv6 address in brackets ([::1])", fails("--seed-nodes", "::1:39530").getMessage());
    assertEquals("--seed-nodes: \"a#b:39530\" is not HOST:PORT (a seed node's cluster host and port): \"a#b\" is not a"
        + " host name, an IPv4 address or an IPv6 address in brackets", fails("--seed-nodes", "h1:1,a#b:39530").getMessage());
    assertEquals("--seed-nodes: \"[::1]:0\" is not HOST:PORT (a seed node's cluster host and port): the port must be"
        + " between 1 and 65535", fails("--seed-nodes", "[::1]:0").getMessage());
    for (String bad : List.of("a_b:1", "a..b:1", "-a:1", "a-:1", "host.1:1", "1.2.3:1", "256.1.1.1:1", "[zz::1]:1",
        "[::1]", "[::1]1", "a:65536", "a:", ":1", "a:b:1", "[::1]:x", "a%eth0:1", "a.:1")) {
      assertEquals("--seed-nodes", fails("--seed-nodes", bad).setting(), bad);
      assertTrue(fails("--seed-nodes", bad).getMessage().startsWith("--seed-nodes: \"" + bad + "\" is not HOST:PORT"), bad);
    }
    Path conf = file("seeds.conf", "corral.cluster.seed-nodes = [\"h1:1\", \"::1:2\"]");
    assertEquals("corral.cluster.seed-nodes", fails("--config", conf.toString()).setting());
  }

  @Test
  void missingOrBrokenConfigFile() throws IOException {
    assertEquals("--config", fails("--config", dir.resolve("absent.conf").toString()).setting());
    assertEquals("CORRAL_CONFIG", fails(Map.of("CORRAL_CONFIG", dir.resolve("absent.conf").toString())).setting());
    Path broken = file("broken.conf", "corral { http.port = ");
    assertEquals("--config", fails("--config", broken.toString()).setting());
  }

  /** A directory given as --config was reported as "no such file". */
  @Test
  void aDirectoryAsTheConfigFileIsCalledOne() {
    assertEquals("--config: \"" + dir + "\" is a directory, not a HOCON file", fails("--config", dir.toString()).getMessage());
    assertEquals("CORRAL_CONFIG: \"" + dir + "\" is a directory, not a HOCON file",
        fails(Map.of("CORRAL_CONFIG", dir.toString())).getMessage());
    assertEquals("--config: no such file: " + dir.resolve("absent.conf"),
        fails("--config", dir.resolve("absent.conf").toString()).getMessage());
  }

  /** data-dir = "" in HOCON was the working directory; a flag refuses an empty value, the environment ignores it. */
  @Test
  void anEmptyPathInHoconIsRefused() throws IOException {
    String repo = "corral.repos.x { type = generic, url = \"https://127.0.0.1:9/\" }\n";
    Map<String, String> settings = new java.util.LinkedHashMap<>();
    settings.put("corral.data-dir", "corral.data-dir = \"\"");
    settings.put("corral.admin-token-file", "corral.admin-token-file = \" \"");
    settings.put("corral.tokens-file", "corral.tokens-file = \"\"");
    settings.put("corral.cluster.tls-dir", "corral.cluster.tls-dir = \"  \"");
    settings.put("corral.access-log", "corral.access-log = \"\"");
    settings.put("corral.http.tls-cert", "corral.http { tls-cert = \"\", tls-key = \"/k\" }");
    settings.put("corral.http.tls-key", "corral.http.tls-key = \"\"");
    settings.put("corral.journal.password-file", "corral.journal { url = \"jdbc:postgresql://127.0.0.1:5432/c\","
        + " password-file = \"\" }");
    settings.put("corral.repos.x.ca-bundle", "corral.repos.x.ca-bundle = \"\"");
    settings.put("corral.repos.x.client-cert", "corral.repos.x { client-cert = \"\", client-key = \"/k\" }");
    settings.put("corral.repos.x.credentials.token-file", "corral.repos.x.credentials { type = bearer, token-file = \"\" }");
    for (Map.Entry<String, String> e : settings.entrySet()) {
      Path conf = file("p.conf", repo + e.getValue() + "\n");
      SettingsException error = fails("--config", conf.toString());
      assertEquals(e.getKey(), error.setting(), e.getValue());
      assertTrue(error.getMessage().replace(dir + "/", "").matches(java.util.regex.Pattern.quote(e.getKey()) + ": \"\\s*\" is empty: give a path,"
          + " or leave the setting out \\(p.conf line 2\\)"), error.getMessage());
    }
    assertEquals("--data-dir: empty value (DIR)", fails("--data-dir", "").getMessage());
    assertEquals(Path.of("./data"), load(Map.of("CORRAL_DATA_DIR", "")).dataDir());
  }

  @Test
  void badPublicBaseUrl() {
    assertEquals("CORRAL_PUBLIC_BASE_URL", fails(Map.of("CORRAL_PUBLIC_BASE_URL", "cache.example")).setting());
  }

  // ---- admin token

  @Test
  void adminTokenFileUnreadableOrEmpty() throws IOException {
    SettingsException missing = fails("--admin-token-file", dir.resolve("nope").toString());
    assertEquals("--admin-token-file", missing.setting());
    assertTrue(missing.getMessage().contains("no such file"), missing.getMessage());
    Path empty = file("empty", " \n");
    assertTrue(fails("--admin-token-file", empty.toString()).getMessage().endsWith("is empty"));
    assertEquals("CORRAL_ADMIN_TOKEN_FILE", fails(Map.of("CORRAL_ADMIN_TOKEN_FILE", dir.toString())).setting());
  }

  @Test
  void adminTokenNeverInToString() throws IOException {
    Path token = file("token", "very-secret-admin-token");
    CorralSettings s = load("--admin-token-file", token.toString());
    assertEquals(Optional.of("very-secret-admin-token"), s.adminToken());
    assertFalse(s.toString().contains("very-secret"), s.toString());
  }

  // ---- credentials

  @Test
  void basicCredentialFromAnEnvironmentVariable() throws IOException {
    Path conf = file("c.conf", """
        corral.repos.priv {
          type = generic
          url = "https://127.0.0.1:9/"
          credentials { type = basic, username = "corral", password-env = "PRIV_PASSWORD" }
        }
        """);
    RepoSettings r = only(load(Map.of("PRIV_PASSWORD", "hunter2"), "--config", conf.toString()));
    assertEquals(Optional.of(new Credential.Basic("corral", "hunter2")), r.credential());
    assertFalse(r.toString().contains("hunter2"), r.toString());

    SettingsException unset = fails("--config", conf.toString());
    assertEquals("corral.repos.priv.credentials.password-env", unset.setting());
    assertTrue(unset.getMessage().contains("PRIV_PASSWORD is not set"), unset.getMessage());
  }

  @Test
  void bearerCredentialFromAFile() throws IOException {
    Path secret = file("token", "tok-123\n");
    Path conf = file("c.conf", "corral.repos.priv { type = npm, url = \"https://127.0.0.1:9/\", "
        + "credentials { type = bearer, token-file = \"" + secret + "\" } }");
    RepoSettings r = only(load("--config", conf.toString()));
    assertEquals(Optional.of(new Credential.Bearer("tok-123")), r.credential());
  }

  @Test
  void basicCredentialPasswordFromAFile() throws IOException {
    Path secret = file("pw", "pw-from-file");
    Path conf = file("c.conf", "corral.repos.priv { type = generic, url = \"https://127.0.0.1:9/\", "
        + "credentials { type = basic, username = u, password-file = \"" + secret + "\" } }");
    assertEquals(Optional.of(new Credential.Basic("u", "pw-from-file")), only(load("--config", conf.toString())).credential());
  }

  @Test
  void credentialToStringHidesTheSecret() {
    Credential basic = new Credential.Basic("alice", "p4ssw0rd");
    Credential bearer = new Credential.Bearer("t0ken");
    assertFalse(basic.toString().contains("p4ssw0rd"), basic.toString());
    assertTrue(basic.toString().contains("alice"), basic.toString());
    assertFalse(bearer.toString().contains("t0ken"), bearer.toString());
  }

  @Test
  void badCredentials() throws IOException {
    String repo = "corral.repos.p { type = generic, url = \"https://127.0.0.1:9/\", credentials ";
    Path inline = file("i.conf", repo + "{ type = basic, username = u, password = \"leaked\" } }");
    SettingsException e = fails("--config", inline.toString());
    assertEquals("corral.repos.p.credentials.password", e.setting());
    assertFalse(e.getMessage().contains("leaked"), e.getMessage());

    Path both = file("b.conf", repo + "{ type = bearer, token-env = A, token-file = \"/x\" } }");
    assertEquals("corral.repos.p.credentials", fails(Map.of("A", "a"), "--config", both.toString()).setting());

    Path neither = file("n.conf", repo + "{ type = bearer } }");
    assertTrue(fails("--config", neither.toString()).getMessage().contains("missing token-env or token-file"));

    Path wrongType = file("w.conf", repo + "{ type = digest, token-env = A } }");
    assertEquals("corral.repos.p.credentials.type", fails(Map.of("A", "a"), "--config", wrongType.toString()).setting());

    Path mixed = file("m.conf", repo + "{ type = bearer, token-env = A, username = u } }");
    assertEquals("corral.repos.p.credentials.username", fails(Map.of("A", "a"), "--config", mixed.toString()).setting());

    Path emptyFile = file("empty", "");
    Path emptySecret = file("e.conf", repo + "{ type = bearer, token-file = \"" + emptyFile + "\" } }");
    assertEquals("corral.repos.p.credentials.token-file", fails("--config", emptySecret.toString()).setting());
  }

  @Test
  void substitutionsResolveAgainstThePassedEnvironment() throws IOException {
    Path conf = file("s.conf", "corral.http.port = 1\ncorral.http.port = ${?PORT_FROM_ENV}");
    assertEquals(4242, load(Map.of("PORT_FROM_ENV", "4242"), "--config", conf.toString()).httpPort());
    assertEquals(1, load(Map.of(), "--config", conf.toString()).httpPort());
  }

  // ---- sumdb-url (go only)

  @Test
  void sumdbUrlIsReadForGoRepositoriesOnly() throws IOException {
    Path ok = file("go.conf", "corral.repos.go { type = go, url = \"http://127.0.0.1:9/g\","
        + " sumdb-url = \"http://127.0.0.1:8/db\" }");
    assertEquals(java.util.Optional.of("http://127.0.0.1:8/db"), only(load("--config", ok.toString())).sumdbUrl());
    assertEquals(java.util.Optional.empty(), only(load("--repo", "go=go:http://127.0.0.1:9/g")).sumdbUrl());

    Path generic = file("generic.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/g\","
        + " sumdb-url = \"http://127.0.0.1:8/db\" }");
    assertTrue(fails("--config", generic.toString()).getMessage().contains("sumdb-url"));
    Path bad = file("bad.conf", "corral.repos.go { type = go, url = \"http://127.0.0.1:9/g\", sumdb-url = \"ftp://x\" }");
    assertTrue(fails("--config", bad.toString()).getMessage().contains("sumdb-url"));
    Path inDefaults = file("defaults.conf", "corral.repo-defaults.sumdb-url = \"http://127.0.0.1:8/db\"");
    fails("--config", inDefaults.toString());
  }

  // ---- oci (issue 15)

  @Test
  void singleNameNamespaceIsReadForOciRepositoriesOnly() throws IOException {
    Path ok = file("oci.conf", "corral.repos.hub { type = oci, url = \"http://127.0.0.1:9/\","
        + " single-name-namespace = library }");
    assertEquals(java.util.Optional.of("library"), only(load("--config", ok.toString())).singleNameNamespace());
    assertEquals(java.util.Optional.empty(), only(load("--repo", "hub=oci:http://127.0.0.1:9/")).singleNameNamespace());
    Path generic = file("generic-ns.conf", "corral.repos.x { type = generic, url = \"http://127.0.0.1:9/g\","
        + " single-name-namespace = library }");
    assertTrue(fails("--config", generic.toString()).getMessage().contains("single-name-namespace"));
    Path bad = file("bad-ns.conf", "corral.repos.hub { type = oci, url = \"http://127.0.0.1:9/\","
        + " single-name-namespace = \"Lib/../x\" }");
    assertTrue(fails("--config", bad.toString()).getMessage().contains("not an image namespace"));
  }

  @Test
  void atMostOneOciRepositoryIsTheRootMirror() throws IOException {
    Path ok = file("root.conf", "corral.repos.hub { type = oci, url = \"http://127.0.0.1:9/\", root-mirror = true }\n"
        + "corral.repos.other { type = oci, url = \"http://127.0.0.1:8/\" }");
    assertTrue(load("--config", ok.toString()).repos().stream().filter(RepoSettings::rootMirror)
        .map(RepoSettings::name).toList().equals(java.util.List.of("hub")));
    Path two = file("two-roots.conf", "corral.repos.a { type = oci, url = \"http://127.0.0.1:9/\", root-mirror = true }\n"
        + "corral.repos.b { type = oci, url = \"http://127.0.0.1:8/\", root-mirror = true }");
    assertTrue(fails("--config", two.toString()).getMessage().contains("only one repository"));
    Path generic = file("generic-root.conf", "corral.repos.g { type = generic, url = \"http://127.0.0.1:9/\", root-mirror = true }");
    assertTrue(fails("--config", generic.toString()).getMessage().contains("root-mirror"));
  }

  @Test
  void v2IsNeverARepositoryName() {
    assertTrue(fails("--repo", "v2=oci:http://127.0.0.1:9/").getMessage().contains("/v2/"));
    assertTrue(fails("--repo", "v2=generic:http://127.0.0.1:9/").getMessage().contains("/v2/"));
  }

  // ---- issue 12: metadata memory, miss rate limit, generic query policy

  @Test
  void serveLimitsDefaultToAQuarterOfTheHeapAndNoMissRateLimit() {
    dev.corral.http.ServeLimits limits = load().serveLimits();
    assertEquals(dev.corral.http.ServeLimits.defaultMetadataMemory(), limits.metadataMemoryBytes());
    assertEquals(Optional.empty(), limits.missRate());
  }

  @Test
  void serveLimitsAreParsed() {
    dev.corral.http.ServeLimits limits = load("--metadata-memory", "96MiB", "--miss-rate-limit", "50/s",
        "--miss-rate-burst", "200").serveLimits();
    assertEquals(96L << 20, limits.metadataMemoryBytes());
    assertEquals(new dev.corral.http.ServeLimits.MissRate(50, 200), limits.missRate().orElseThrow());
    assertEquals(new dev.corral.http.ServeLimits.MissRate(10, 600),
        load(Map.of("CORRAL_MISS_RATE_LIMIT", "600/m")).serveLimits().missRate().orElseThrow(),
        "without a burst, the rate's N");
    assertEquals(new dev.corral.http.ServeLimits.MissRate(2, 7200),
        load("--miss-rate-limit", "7200 / h").serveLimits().missRate().orElseThrow());
  }

  @Test
  void badServeLimitsAreOneLineErrors() {
    assertEquals("--metadata-memory: \"lots\" is not a size (bytes, or with KiB, MiB, GiB, TiB) or auto",
        fails("--metadata-memory", "lots").getMessage());
    assertEquals("--metadata-memory: \"1KiB\" is too small: must be at least 1 MiB",
        fails("--metadata-memory", "1KiB").getMessage());
    assertEquals("--metadata-memory: \"1000\" is too small: must be at least 1 MiB; a number without a unit is bytes",
        fails("--metadata-memory", "1000").getMessage());
    assertEquals("--miss-rate-limit: \"50\" is not a rate (N/s, N/m or N/h, e.g. 50/s) or off",
        fails("--miss-rate-limit", "50").getMessage());
    assertEquals("--miss-rate-limit: \"5/d\" is not a rate (N/s, N/m or N/h, e.g. 50/s) or off",
        fails("--miss-rate-limit", "5/d").getMessage());
    assertEquals("--miss-rate-limit: must be between 1 and 1000000000 per unit",
        fails("--miss-rate-limit", "0/s").getMessage());
    assertEquals("--miss-rate-burst: must be at least 1", fails("--miss-rate-limit", "5/s", "--miss-rate-burst", "0").getMessage());
    assertEquals("--miss-rate-burst: has no effect without --miss-rate-limit (it is off)",
        fails("--miss-rate-burst", "10").getMessage());
  }

  @Test
  void queryPolicyOfGenericRepositories() throws IOException {
    Path conf = file("q.conf", """
        corral.repos {
          a { type = generic, url = "http://127.0.0.1:1/" }
          b { type = generic, url = "http://127.0.0.1:1/", query = drop }
          c { type = generic, url = "http://127.0.0.1:1/", query = [v, arch] }
          d { type = generic, url = "http://127.0.0.1:1/", query = "v,arch" }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    assertEquals("keep", s.repo("a").orElseThrow().query().describe());
    assertEquals("drop", s.repo("b").orElseThrow().query().describe());
    assertEquals("arch,v", s.repo("c").orElseThrow().query().describe());
    assertEquals("arch,v", s.repo("d").orElseThrow().query().describe());
  }

  @Test
  void badQueryPolicies() throws IOException {
    Path npm = file("qn.conf", "corral.repos.n { type = npm, url = \"http://127.0.0.1:1/\", query = drop }");
    assertEquals("corral.repos.n.query: only generic repositories take a query policy (the other types know their"
        + " queries) (qn.conf line 1)", fails("--config", npm.toString()).getMessage().replace(dir + "/", ""));
    Path bad = file("qb.conf", "corral.repos.g { type = generic, url = \"http://127.0.0.1:1/\", query = [\"a=b\"] }");
    assertEquals("corral.repos.g.query: \"a=b\" is not a query parameter name (expected keep, drop, or a list of"
        + " parameter names) (qb.conf line 1)", fails("--config", bad.toString()).getMessage().replace(dir + "/", ""));
    Path defaults = file("qd.conf", "corral.repo-defaults.query = drop");
    assertEquals("corral.repo-defaults.query: can only be set per repository, under corral.repos.NAME (qd.conf line 1)",
        fails("--config", defaults.toString()).getMessage().replace(dir + "/", ""));
  }

  // ---- freshness (issue 16: generic repositories)

  @Test
  void freshnessRulesOfGenericRepositories() throws IOException {
    Path conf = file("f.conf", """
        corral.repos {
          deb {
            type = generic, url = "http://127.0.0.1:1/debian"
            freshness = [ { path = "dists/**", ttl = 5m }, { path = "pool/**", immutable = true }, { path = "x", ttl = 0s } ]
          }
          plain { type = generic, url = "http://127.0.0.1:1/" }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    var rules = s.repo("deb").orElseThrow().freshness();
    assertEquals(dev.corral.core.upstream.Lifetime.fixed(java.time.Duration.ofMinutes(5)), rules.lifetimeOf("dists/a/Release"));
    assertEquals(dev.corral.core.upstream.Lifetime.IMMUTABLE, rules.lifetimeOf("pool/a.deb"));
    assertEquals(dev.corral.core.upstream.Lifetime.fixed(java.time.Duration.ZERO), rules.lifetimeOf("x"));
    assertEquals(dev.corral.core.upstream.Lifetime.UPSTREAM, rules.lifetimeOf("README"));
    assertEquals(List.of(), s.repo("plain").orElseThrow().freshness().rules());
  }

  @Test
  void badFreshnessRulesAreClearErrors() throws IOException {
    record Case(String value, String message) {}
    List<Case> cases = List.of(
        new Case("\"5m\"", "corral.repos.g.freshness: expected a list of { path = PATTERN, ttl = DURATION } or"
            + " { path = PATTERN, immutable = true } (b.conf line 1)"),
        new Case("[ \"dists/**\" ]", "corral.repos.g.freshness: rule 1: expected a list of { path = PATTERN, ttl ="
            + " DURATION } or { path = PATTERN, immutable = true } (b.conf line 1)"),
        new Case("[ { path = \"a\", ttl = 1m }, { path = \"b\", tll = 1m } ]",
            "corral.repos.g.freshness: rule 2: unknown key \"tll\" (known: immutable, path, ttl) (b.conf line 1)"),
        new Case("[ { ttl = 1m } ]", "corral.repos.g.freshness: rule 1: needs path = PATTERN (a glob over the path"
            + " after the repository name, e.g. \"dists/**\") (b.conf line 1)"),
        new Case("[ { path = \"a\" } ]",
            "corral.repos.g.freshness: rule 1: needs exactly one of ttl = DURATION and immutable = true (b.conf line 1)"),
        new Case("[ { path = \"a\", ttl = 1m, immutable = true } ]",
            "corral.repos.g.freshness: rule 1: needs exactly one of ttl = DURATION and immutable = true (b.conf line 1)"),
        new Case("[ { path = \"a\", immutable = false } ]", "corral.repos.g.freshness: rule 1: immutable: must be"
            + " true (leave the rule out to follow the upstream's headers) (b.conf line 1)"),
        new Case("[ { path = \"a\", ttl = 5 } ]",
            "corral.repos.g.freshness: rule 1: ttl: \"5\" is not a duration (add a unit, "
                + SettingValues.DURATION_EXAMPLES + ") (b.conf line 1)"),
        new Case("[ { path = \"a\", ttl = -5m } ]",
            "corral.repos.g.freshness: rule 1: ttl: must not be negative (b.conf line 1)"),
        new Case("[ { path = \"/dists/**\", ttl = 5m } ]", "corral.repos.g.freshness: rule 1: path: path pattern"
            + " \"/dists/**\" starts with /: patterns match the path after the repository name, without a leading /"
            + " (b.conf line 1)"),
        new Case("[ { path = \"pool/[ab]\", immutable = true } ]", "corral.repos.g.freshness: rule 1: path: path"
            + " pattern \"pool/[ab]\" uses [, which patterns do not support (only *, ** and ?) (b.conf line 1)"));
    for (Case c : cases) {
      Path bad = file("b.conf", "corral.repos.g { type = generic, url = \"http://127.0.0.1:1/\", freshness = "
          + c.value() + " }");
      assertEquals(c.message(), fails("--config", bad.toString()).getMessage().replace(dir + "/", ""), c.value());
    }
    Path npm = file("fn.conf", "corral.repos.n { type = npm, url = \"http://127.0.0.1:1/\","
        + " freshness = [ { path = \"a\", ttl = 1m } ] }");
    assertEquals("corral.repos.n.freshness: only generic repositories take freshness rules (the other types know"
        + " which of their files change) (fn.conf line 1)",
        fails("--config", npm.toString()).getMessage().replace(dir + "/", ""));
    Path defaults = file("fd.conf", "corral.repo-defaults.freshness = []");
    assertEquals("corral.repo-defaults.freshness: can only be set per repository, under corral.repos.NAME (fd.conf line 1)",
        fails("--config", defaults.toString()).getMessage().replace(dir + "/", ""));
  }

  // ---- allowed-hosts (issue 12: upstream requests confined)

  @Test
  void allowedHostsAreReadAndMakeTheUpstreamScope() throws IOException {
    Path conf = file("ah.conf", """
        corral.repos {
          n { type = npm, url = "http://127.0.0.1:1/npm", allowed-hosts = ["files.upstream.example", "127.0.0.1:8443"] }
          p { type = pypi, url = "http://127.0.0.1:2/pypi/simple/", allowed-hosts = "files.upstream.example, [::1]:9" }
          g { type = go, url = "http://127.0.0.1:3/go", sumdb-url = "http://127.0.0.1:4/db" }
        }
        """);
    CorralSettings s = load("--config", conf.toString());
    assertEquals(List.of("files.upstream.example", "127.0.0.1:8443"),
        s.repo("n").orElseThrow().allowedHosts().stream().map(AllowedHost::toString).toList());
    assertEquals(List.of("files.upstream.example", "[::1]:9"),
        s.repo("p").orElseThrow().allowedHosts().stream().map(AllowedHost::toString).toList());
    assertEquals(List.of(), only(load("--repo", "x=generic:http://127.0.0.1:1/")).allowedHosts());

    UpstreamScope npm = CorralServer.upstreamScope(s.repo("n").orElseThrow());
    assertEquals(UpstreamScope.Admission.WITH_CREDENTIAL, npm.admit(URI.create("http://127.0.0.1:1/npm/a/-/a-1.tgz")));
    assertEquals(UpstreamScope.Admission.WITHOUT_CREDENTIAL, npm.admit(URI.create("https://127.0.0.1:8443/a.tgz")));
    assertThrows(UpstreamScope.Refused.class, () -> npm.admit(URI.create("http://127.0.0.1:1/other")));
    UpstreamScope pypi = CorralServer.upstreamScope(s.repo("p").orElseThrow());
    assertEquals(UpstreamScope.Admission.WITH_CREDENTIAL,
        pypi.admit(URI.create("http://127.0.0.1:2/pypi/packages/a.whl")), "a PyPI index's files beside simple/");
    assertThrows(UpstreamScope.Refused.class, () -> pypi.admit(URI.create("http://127.0.0.1:2/other/a.whl")));
    UpstreamScope go = CorralServer.upstreamScope(s.repo("g").orElseThrow());
    assertEquals(UpstreamScope.Admission.WITHOUT_CREDENTIAL, go.admit(URI.create("http://127.0.0.1:4/db/lookup/m@v1")));
  }

  @Test
  void badAllowedHostsAreOneLineErrors() throws IOException {
    Path url = file("ahu.conf", "corral.repos.n { type = npm, url = \"http://127.0.0.1:1/\", allowed-hosts = [\"https://files.upstream.example/\"] }");
    assertEquals("corral.repos.n.allowed-hosts: \"https://files.upstream.example/\" is not HOST or HOST:PORT (no scheme,"
        + " path or user) (ahu.conf line 1)", fails("--config", url.toString()).getMessage().replace(dir + "/", ""));
    Path port = file("ahp.conf", "corral.repos.n { type = npm, url = \"http://127.0.0.1:1/\", allowed-hosts = [\"h.example:99999\"] }");
    assertTrue(fails("--config", port.toString()).getMessage().contains("no port between 1 and 65535"));
    Path nested = file("ahn.conf", "corral.repos.n { type = npm, url = \"http://127.0.0.1:1/\", allowed-hosts = [[a]] }");
    assertTrue(fails("--config", nested.toString()).getMessage().contains("expected a list of HOST or HOST:PORT"));
    Path defaults = file("ahd.conf", "corral.repo-defaults.allowed-hosts = [\"h.example\"]");
    assertTrue(fails("--config", defaults.toString()).getMessage().contains("can only be set per repository"));
  }

  // ---- connection limits (issue 12: bounded connections)

  @Test
  void connectionLimitsDefaultToTheCapTheOldSettingPromised() {
    CorralSettings s = load();
    assertEquals(new ConnectionLimits(4096, Duration.ofSeconds(10), Duration.ofSeconds(300)), s.connections());
    CorralSettings p = load();
    assertEquals(300_000, CorralServer.pekkoConfig(p, dir).getDuration("pekko.http.server.idle-timeout").toMillis(),
        "Pekko's idle timeout follows corral.http.idle-timeout");
  }

  @Test
  void connectionLimitsFromFlagsEnvironmentAndFile() throws IOException {
    CorralSettings flags = load("--max-connections", "100", "--header-read-timeout", "2s", "--idle-timeout", "1m");
    assertEquals(new ConnectionLimits(100, Duration.ofSeconds(2), Duration.ofMinutes(1)), flags.connections());
    CorralSettings env = load(Map.of("CORRAL_MAX_CONNECTIONS", "7", "CORRAL_HEADER_READ_TIMEOUT", "500ms",
        "CORRAL_IDLE_TIMEOUT", "20s"));
    assertEquals(new ConnectionLimits(7, Duration.ofMillis(500), Duration.ofSeconds(20)), env.connections());
    Path conf = file("conns.conf", "corral.http { max-connections = 9, header-read-timeout = 3s, idle-timeout = 4s }");
    assertEquals(new ConnectionLimits(9, Duration.ofSeconds(3), Duration.ofSeconds(4)),
        load("--config", conf.toString()).connections());
  }

  @Test
  void badConnectionLimitsNameTheSetting() throws IOException {
    assertEquals("--max-connections: must be at least 1", fails("--max-connections", "0").getMessage());
    assertEquals("--max-connections: \"lots\" is not a whole number", fails("--max-connections", "lots").getMessage());
    assertEquals("--max-connections: must be at most 1000000", fails("--max-connections", "2000000").getMessage());
    assertEquals("--header-read-timeout: must be more than 0", fails("--header-read-timeout", "0s").getMessage());
    assertEquals("--header-read-timeout: \"10\" is not a duration (add a unit, e.g. 500ms, 5s, 2m)",
        fails("--header-read-timeout", "10").getMessage());
    assertEquals("CORRAL_IDLE_TIMEOUT: must not be negative", fails(Map.of("CORRAL_IDLE_TIMEOUT", "-1s")).getMessage());
    Path conf = file("bad.conf", "corral.http.max-connections = -5");
    assertEquals("corral.http.max-connections: must be at least 1 (bad.conf line 1)",
        fails("--config", conf.toString()).getMessage().replace(dir + "/", ""));
  }
}
