package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.testkit.Await;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real yarn classic (Debian's {@code yarnpkg}) and pnpm (10.x, from the npm registry, in this
 * module's {@code target/}) through one Corral process: each installs a four-package tree (a
 * scoped package among them, two levels of transitive dependencies) from a fixture registry on
 * 127.0.0.1 whose packuments name the fixture's own tarball URLs, so an un-rewritten URL would
 * bypass Corral. Then a second install, from a fresh project with an empty client cache, store
 * and home, must make no request upstream and be answered only from Corral's cache.
 *
 * <p>Each client runs with its own home and XDG directories, its registry set only in the
 * project's own rc file, pointing at Corral, and no proxy, offline mirror or update check; it runs
 * under strace, and a connection to anything but loopback fails the test.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class YarnPnpmClientIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofSeconds(90);
  /** 10.x: pnpm 11 needs a newer Node.js than 20. */
  static final String PNPM_VERSION = "10.34.9";
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Inherited variables that would steer a client elsewhere (a registry, a proxy, a config dir). */
  private static final List<String> DROPPED = List.of("npm_", "NPM_", "YARN_", "yarn_", "PNPM_", "pnpm_", "XDG_",
      "COREPACK_", "NODE_OPTIONS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy");

  /** root -> p1, p2; p1 -> @tree/s3. */
  private final NpmTree tree = NpmTree.of(4, List.of(), 0);
  private final Map<String, FixtureRegistry> fixtures = new LinkedHashMap<>();
  private Path work;
  private Path accessLog;
  private Path pnpm;
  private CorralProcess node;
  private String corral;

  YarnPnpmClientIT() throws IOException {}

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    ClientCommand.require("node", "nodejs", "YarnPnpmClientIT");
    ClientCommand.require("yarnpkg", "yarnpkg", "YarnPnpmClientIT");
    pnpm = ClientCommand.requireFromNpm("pnpm", PNPM_VERSION, "pnpm", "YarnPnpmClientIT");
    work = dir;
    accessLog = work.resolve("access.json");
    List<String> repos = new ArrayList<>();
    for (String repo : List.of("yarn", "pnpm")) {
      FixtureRegistry f = tree.serve(work.resolve("upstream-" + repo));
      fixtures.put(repo, f);
      repos.add(repo + "=npm:" + f.url() + "/");
    }
    node = CorralProcess.serve("yarn-pnpm", List.of(), work.resolve("data"),
        List.of("--access-log", accessLog.toString(), "--access-log-format", "json"), repos.toArray(String[]::new));
    corral = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
    fixtures.values().forEach(FixtureRegistry::close);
  }

  /** A new project depending on the tree's root, with its own home and XDG directories. */
  private Path project(String name) throws IOException {
    Path dir = work.resolve(name);
    Files.createDirectories(dir.resolve("home"));
    Files.writeString(dir.resolve("package.json"), """
        {"name":"%s","version":"1.0.0","private":true,"dependencies":{"%s":"^1.0.0"}}
        """.formatted(name, tree.root().name()));
    return dir;
  }

  private static Map<String, String> isolated(Path dir) {
    Path home = dir.resolve("home");
    Map<String, String> env = new LinkedHashMap<>();
    env.put("HOME", home.toString());
    env.put("XDG_CONFIG_HOME", home.resolve(".config").toString());
    env.put("XDG_CACHE_HOME", home.resolve(".cache").toString());
    env.put("XDG_DATA_HOME", home.resolve(".local/share").toString());
    env.put("XDG_STATE_HOME", home.resolve(".local/state").toString());
    return env;
  }

  /**
   * {@code yarnpkg install}: the registry in the project's .yarnrc, the cache in the project.
   * Debian's yarnpkg loads its modules from /usr/share/nodejs, where a Node.js not from Debian
   * does not look by itself.
   */
  private ClientCommand.Result yarn(String name) throws Exception {
    Path dir = project(name);
    String registry = corral + "/yarn/";
    Files.writeString(dir.resolve(".yarnrc"), "registry \"" + registry + "\"\ndisable-self-update-check true\n");
    Map<String, String> env = isolated(dir);
    env.put("NODE_PATH", "/usr/share/nodejs");
    return ClientCommand.runLoopbackOnly(dir, env, DROPPED, CLIENT_TIMEOUT, List.of("yarnpkg", "install", "--non-interactive",
        "--no-progress", "--verbose", "--cache-folder", dir.resolve("yarn-cache").toString()));
  }

  /** {@code pnpm install}: registry, store and metadata cache in the project's .npmrc. */
  private ClientCommand.Result pnpm(String name) throws Exception {
    Path dir = project(name);
    Files.writeString(dir.resolve(".npmrc"), """
        registry=%s
        store-dir=%s
        cache-dir=%s
        update-notifier=false
        """.formatted(corral + "/pnpm/", dir.resolve("pnpm-store"), dir.resolve("pnpm-cache")));
    return ClientCommand.runLoopbackOnly(dir, isolated(dir), DROPPED, CLIENT_TIMEOUT,
        List.of(pnpm.toString(), "install", "--reporter=append-only"));
  }

  /**
   * The tree loads, and each package's files in {@code node_modules} are byte for byte the files
   * of the tarball the fixture served ({@code packageDir} says where a client puts a package).
   */
  private void assertInstalled(Path dir, java.util.function.Function<String, Path> packageDir,
      ClientCommand.Result r) throws Exception {
    ClientCommand.Result loaded = ClientCommand.run(dir, Map.of(), CLIENT_TIMEOUT,
        List.of("node", "-e", "console.log(JSON.stringify(require('" + tree.root().name() + "').sort()))")).ok();
    assertEquals(JSON.writeValueAsString(tree.names()), loaded.output().trim(), r.output());
    for (NpmTree.Pkg p : tree.packages) {
      Map<String, byte[]> files = NpmTree.files(p.tarball());
      assertFalse(files.isEmpty());
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        Path installed = packageDir.apply(p.name()).resolve(f.getKey());
        assertTrue(Files.isRegularFile(installed), installed + "\n" + r.output());
        assertArrayEquals(f.getValue(), Files.readAllBytes(installed), installed.toString());
      }
    }
  }

  /** The fixture saw each packument and tarball exactly once, and only from Corral. */
  private void assertEachFetchedOnceByCorral(FixtureRegistry fixture, String client, ClientCommand.Result r) {
    for (NpmTree.Pkg p : tree.packages) {
      assertEquals(1, fixture.count(p.packumentPath()), p.packumentPath() + "\n" + r.output());
      assertEquals(1, fixture.count(p.tarballPath()), p.tarballPath() + "\n" + r.output());
    }
    assertEquals(2 * tree.packages.size(), fixture.requests().size(), fixture.requests().toString());
    for (FixtureRegistry.Request q : fixture.requests()) {
      assertFalse(q.header("User-Agent").orElse("").startsWith(client + "/"), client + " reached the fixture: " + q);
    }
  }

  /** The packument and tarball paths of the tree under {@code /repo}, percent-decoded. */
  private Set<String> treePaths(String repo) {
    Set<String> out = new TreeSet<>();
    for (NpmTree.Pkg p : tree.packages) {
      out.add("/" + repo + "/" + p.name());
      out.add("/" + repo + p.tarballPath());
    }
    return out;
  }

  /**
   * The access-log lines for {@code repo} from line {@code from} on, once they cover every path of
   * the tree (the log is written through a buffer, so the last lines may come a moment after the
   * client ended).
   */
  private List<JsonNode> awaitAccess(String repo, int from) throws Exception {
    List<JsonNode> lines = new ArrayList<>();
    Await.until(Duration.ofSeconds(20), () -> "access lines for every path of " + repo + " from line " + from
        + ":\n" + lines, () -> {
          lines.clear();
          List<String> all = ClientCommand.completeLines(accessLog);
          for (String line : all.subList(Math.min(from, all.size()), all.size())) {
            JsonNode json = JSON.readTree(line);
            if (repo.equals(json.path("repo").asText())) {
              lines.add(json);
            }
          }
          Set<String> seen = new TreeSet<>();
          lines.forEach(l -> seen.add(URLDecoder.decode(l.get("path").asText(), StandardCharsets.UTF_8)));
          return seen.containsAll(treePaths(repo));
        });
    return lines;
  }

  private int accessLines() throws IOException {
    return ClientCommand.completeLines(accessLog).size();
  }

  /**
   * The second install, cold client and warm Corral: the fixture's count does not move, and every
   * answer Corral gave the client was a 200 from its cache.
   */
  private void assertWarmInstall(String repo, String client, int upstreamBefore, int from, ClientCommand.Result r)
      throws Exception {
    FixtureRegistry fixture = fixtures.get(repo);
    List<FixtureRegistry.Request> all = fixture.requests();
    assertEquals(List.of(), all.subList(upstreamBefore, all.size()).stream().map(FixtureRegistry.Request::path).toList(),
        "the second install made requests upstream\n" + r.output());
    List<JsonNode> lines = awaitAccess(repo, from);
    for (JsonNode line : lines) {
      assertEquals(200, line.get("status").intValue(), line.toString());
      assertEquals("HIT", line.get("cache").asText(), line.toString());
      assertTrue(line.get("user_agent").asText().startsWith(client + "/"), line.toString());
    }
  }

  @Test
  void yarnInstallsThroughCorralAndAnEmptyCacheInstallsAgainWithNoUpstreamRequest() throws Exception {
    FixtureRegistry fixture = fixtures.get("yarn");
    ClientCommand.Result first = yarn("yarn-first").ok();
    Path dir = work.resolve("yarn-first");
    assertInstalled(dir, name -> dir.resolve("node_modules").resolve(name), first);
    assertEachFetchedOnceByCorral(fixture, "yarn", first);
    // yarn.lock records each tarball as Corral's URL (the fixture's, rewritten), with its sha1
    Matcher m = Pattern.compile("resolved \"([^\"#]+)#[0-9a-f]{40}\"").matcher(Files.readString(dir.resolve("yarn.lock")));
    Set<String> resolved = new TreeSet<>();
    while (m.find()) {
      resolved.add(m.group(1));
    }
    Set<String> expected = new TreeSet<>();
    tree.packages.forEach(p -> expected.add(corral + "/yarn" + p.tarballPath()));
    assertEquals(expected, resolved, Files.readString(dir.resolve("yarn.lock")));
    awaitAccess("yarn", 0);

    int upstream = fixture.requests().size();
    int from = accessLines();
    ClientCommand.Result second = yarn("yarn-second").ok();
    Path again = work.resolve("yarn-second");
    assertInstalled(again, name -> again.resolve("node_modules").resolve(name), second);
    assertWarmInstall("yarn", "yarn", upstream, from, second);
  }

  @Test
  void pnpmInstallsThroughCorralAndAnEmptyStoreInstallsAgainWithNoUpstreamRequest() throws Exception {
    FixtureRegistry fixture = fixtures.get("pnpm");
    ClientCommand.Result first = pnpm("pnpm-first").ok();
    Path dir = work.resolve("pnpm-first");
    assertInstalled(dir, name -> pnpmPackageDir(dir, name), first);
    assertEachFetchedOnceByCorral(fixture, "pnpm", first);
    // each tarball was fetched by pnpm from Corral (the lockfile names none for a registry's own)
    for (JsonNode line : awaitAccess("pnpm", 0)) {
      assertTrue(line.get("user_agent").asText().startsWith("pnpm/"), line.toString());
    }

    int upstream = fixture.requests().size();
    int from = accessLines();
    ClientCommand.Result second = pnpm("pnpm-second").ok();
    Path again = work.resolve("pnpm-second");
    assertInstalled(again, name -> pnpmPackageDir(again, name), second);
    assertWarmInstall("pnpm", "pnpm", upstream, from, second);
  }

  /** pnpm's layout: {@code node_modules/.pnpm/NAME@VERSION/node_modules/NAME}, a scope's slash as {@code +}. */
  private static Path pnpmPackageDir(Path project, String name) {
    return project.resolve("node_modules/.pnpm").resolve(name.replace('/', '+') + "@1.0.0")
        .resolve("node_modules").resolve(name);
  }
}
