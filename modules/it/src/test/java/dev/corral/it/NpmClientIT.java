package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code npm} client through a Corral process: {@code npm install} of a scoped package
 * whose dependency tree is three packages deep, from packages made with {@code npm pack} during
 * the test and served by a fixture registry on 127.0.0.1 whose packuments name the fixture's own
 * tarball URLs (so an un-rewritten URL would bypass Corral). Each install uses a fresh npm cache.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NpmClientIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofSeconds(90);

  /** The tree: @demo/scoped -> demo-pkg ^1.0.0 -> demo-dep ^1.0.0. */
  record Pkg(String name, String dependency, String fixtureFile) {
    String unscoped() {
      return name.substring(name.indexOf('/') + 1);
    }

    /** The packument path as Corral asks the registry for it (npm itself sends %2f). */
    String packumentPath() {
      return "/" + name.replace("/", "%2F");
    }

    String tarballPath() {
      return "/" + name + "/-/" + fixtureFile;
    }
  }

  static final List<Pkg> PACKAGES = List.of(
      new Pkg("@demo/scoped", "demo-pkg", "scoped-1.0.0.tgz"),
      new Pkg("demo-pkg", "demo-dep", "demo-pkg-1.0.0.tgz"),
      new Pkg("demo-dep", null, "demo-dep-1.0.0.tgz"));

  static final Map<String, byte[]> tarballs = new LinkedHashMap<>();

  /**
   * One Corral process for the class (a JVM start costs ~10 s on this machine); each test has
   * its own repository and fixture, so its keys and upstream counts are its own.
   */
  private static final List<String> REPOS = List.of("install", "three", "tampered", "ci");

  private Path work;
  private final Map<String, FixtureRegistry> fixtures = new LinkedHashMap<>();
  private CorralProcess node;
  private String corral;
  private final ExecutorService pool = Executors.newFixedThreadPool(3);

  /** Packs each package with the real {@code npm pack}. */
  static void pack(Path packed) throws Exception {
    ClientCommand.require("npm", "npm", "NpmClientIT");
    ClientCommand.require("node", "nodejs", "NpmClientIT");
    for (Pkg p : PACKAGES) {
      Path src = packed.resolve("src-" + p.unscoped());
      Files.createDirectories(src);
      String deps = p.dependency() == null ? "{}" : "{\"" + p.dependency() + "\": \"^1.0.0\"}";
      Files.writeString(src.resolve("package.json"), """
          {"name": "%s", "version": "1.0.0", "main": "index.js", "license": "MIT", "dependencies": %s}
          """.formatted(p.name(), deps));
      String below = p.dependency() == null ? "''" : "' > ' + require('" + p.dependency() + "')";
      Files.writeString(src.resolve("index.js"), "module.exports = '" + p.name() + "@1.0.0' + " + below + ";\n");
      Path out = packed.resolve("out-" + p.unscoped());
      Files.createDirectories(out);
      ClientCommand.run(src, npmEnv(), CLIENT_TIMEOUT, List.of("npm", "pack", "--pack-destination", out.toString(),
          "--userconfig", "/dev/null", "--cache", packed.resolve("pack-cache").toString())).ok();
      try (var files = Files.list(out)) {
        Path tgz = files.filter(f -> f.toString().endsWith(".tgz")).findFirst()
            .orElseThrow(() -> new AssertionError("npm pack wrote no .tgz for " + p.name()));
        tarballs.put(p.name(), Files.readAllBytes(tgz));
      }
    }
  }

  @BeforeAll
  void startCorral(@TempDir Path dir) throws Exception {
    work = dir;
    pack(work.resolve("packed"));
    List<String> repos = new ArrayList<>();
    for (String repo : REPOS) {
      FixtureRegistry f = startFixture(work.resolve("upstream-" + repo));
      fixtures.put(repo, f);
      repos.add(repo + "=npm:" + f.url() + "/");
    }
    node = CorralProcess.serve("npm-clients", List.of(), work.resolve("data"), List.of(), repos.toArray(String[]::new));
    corral = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    pool.shutdownNow();
    if (node != null) {
      node.close();
    }
    fixtures.values().forEach(FixtureRegistry::close);
  }

  /** The environment without the caller's npm settings. */
  static Map<String, String> npmEnv() {
    Map<String, String> env = new LinkedHashMap<>();
    System.getenv().keySet().stream().filter(k -> k.toLowerCase().startsWith("npm_config_"))
        .forEach(k -> env.put(k, "")); // ProcessBuilder cannot unset through putAll; empty = default
    return env;
  }

  /** Serves the packed tarballs and packuments naming the fixture's own tarball URLs. */
  static FixtureRegistry startFixture(Path root) throws IOException {
    FixtureRegistry fixture = new FixtureRegistry(root);
    Map<String, byte[]> packuments = new LinkedHashMap<>();
    for (Pkg p : PACKAGES) {
      Path file = fixture.root().resolve(p.tarballPath().substring(1));
      Files.createDirectories(file.getParent());
      Files.write(file, tarballs.get(p.name()));
      packuments.put(p.packumentPath(), packument(p, fixture.url() + p.tarballPath()).getBytes(StandardCharsets.UTF_8));
    }
    fixture.route(r -> Optional.ofNullable(packuments.get(r.path()))
        .map(body -> FixtureRegistry.Answer.of(200, "application/json", body)));
    return fixture;
  }

  static String packument(Pkg p, String tarballUrl) {
    byte[] tgz = tarballs.get(p.name());
    String deps = p.dependency() == null ? "{}" : "{\"" + p.dependency() + "\":\"^1.0.0\"}";
    return """
        {"_id":"%s","name":"%s","dist-tags":{"latest":"1.0.0"},
         "time":{"created":"2026-01-01T00:00:00.000Z","modified":"2026-01-01T00:00:00.000Z","1.0.0":"2026-01-01T00:00:00.000Z"},
         "versions":{"1.0.0":{"name":"%s","version":"1.0.0","main":"index.js","license":"MIT","dependencies":%s,
           "dist":{"tarball":"%s","shasum":"%s","integrity":"sha512-%s"}}}}
        """.formatted(p.name(), p.name(), p.name(), deps, tarballUrl,
        HexFormat.of().formatHex(digest("SHA-1", tgz)), Base64.getEncoder().encodeToString(digest("SHA-512", tgz)));
  }

  private static byte[] digest(String algorithm, byte[] b) {
    try {
      return MessageDigest.getInstance(algorithm).digest(b);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code npm install @demo/scoped} in a new project with a fresh cache. Audit stays on: its
   * POST is refused by Corral and must not break the install.
   */
  private ClientCommand.Result install(String repo, String project, String... extra) throws Exception {
    return install(corral + "/" + repo, work.resolve(project), work.resolve(project + "-cache"), extra);
  }

  /** {@code npm install @demo/scoped} from {@code repoUrl} in a new project {@code dir}. */
  static ClientCommand.Result install(String repoUrl, Path dir, Path cache, String... extra) throws Exception {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("package.json"),
        "{\"name\":\"" + dir.getFileName() + "\",\"version\":\"1.0.0\",\"private\":true}\n");
    List<String> cmd = new ArrayList<>(List.of("npm", "install", "@demo/scoped", "--registry", repoUrl + "/",
        "--cache", cache.toString(), "--userconfig", "/dev/null",
        "--no-fund", "--no-update-notifier", "--loglevel", "http"));
    cmd.addAll(List.of(extra));
    return ClientCommand.run(dir, npmEnv(), CLIENT_TIMEOUT, cmd);
  }

  private void assertInstalled(String repo, String project) throws Exception {
    assertInstalled(corral + "/" + repo, work.resolve(project));
  }

  /** The installed tree loads, and the lockfile resolved every package through {@code repoUrl}. */
  static void assertInstalled(String repoUrl, Path dir) throws Exception {
    ClientCommand.Result loaded = ClientCommand.run(dir, npmEnv(), CLIENT_TIMEOUT,
        List.of("node", "-e", "console.log(require('@demo/scoped'))")).ok();
    assertEquals("@demo/scoped@1.0.0 > demo-pkg@1.0.0 > demo-dep@1.0.0", loaded.output().trim());
    String lock = Files.readString(dir.resolve("package-lock.json"));
    Matcher m = Pattern.compile("\"resolved\": \"([^\"]+)\"").matcher(lock);
    List<String> resolved = new ArrayList<>();
    while (m.find()) {
      resolved.add(m.group(1));
    }
    String base = repoUrl;
    assertEquals(List.of(base + "/@demo/scoped/-/scoped-1.0.0.tgz", base + "/demo-dep/-/demo-dep-1.0.0.tgz",
        base + "/demo-pkg/-/demo-pkg-1.0.0.tgz"), resolved.stream().sorted().toList(), lock);
  }

  static void assertOnlyCorralAskedTheFixture(FixtureRegistry fixture) {
    for (FixtureRegistry.Request r : fixture.requests()) {
      assertFalse(r.header("User-Agent").orElse("").startsWith("npm/"), "npm reached the fixture directly: " + r);
    }
  }

  /**
   * The response headers npm itself kept for each answer it cached, by URL (percent-decoded): its
   * cache index ({@code _cacache/index-v5}, one {@code HASH<TAB>JSON} line per entry) records
   * them as received, {@code Content-Encoding} among them, though npm hands on the decoded body.
   */
  static Map<String, JsonNode> cachedResponseHeaders(Path cache) throws IOException {
    ObjectMapper json = new ObjectMapper();
    Map<String, JsonNode> out = new LinkedHashMap<>();
    try (var files = Files.walk(cache.resolve("_cacache/index-v5"))) {
      for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
        for (String line : Files.readAllLines(f)) {
          int tab = line.indexOf('\t');
          if (tab > 0) {
            JsonNode metadata = json.readTree(line.substring(tab + 1)).path("metadata");
            out.put(URLDecoder.decode(metadata.path("url").asText(), StandardCharsets.UTF_8),
                metadata.path("resHeaders"));
          }
        }
      }
    }
    return out;
  }

  @Test
  void installOfAScopedTreeGoesThroughCorral() throws Exception {
    FixtureRegistry fixture = fixtures.get("install");
    ClientCommand.Result r = install("install", "app").ok();
    assertInstalled("install", "app");
    assertOnlyCorralAskedTheFixture(fixture);
    for (Pkg p : PACKAGES) {
      assertEquals(1, fixture.count(p.packumentPath()), p.packumentPath() + "\n" + r.output());
      assertEquals(1, fixture.count(p.tarballPath()), p.tarballPath());
    }
    assertEquals(Map.of(), fixture.repeated());
    assertTrue(r.output().contains("POST 405"), "npm's audit was refused and the install went on\n" + r.output());

    // npm takes gzip: each packument reached it gzip-encoded, each tarball as it is
    Map<String, JsonNode> received = cachedResponseHeaders(work.resolve("app-cache"));
    for (Pkg p : PACKAGES) {
      JsonNode packument = received.get(corral + "/install/" + p.name());
      assertTrue(packument != null, p.name() + "'s packument in npm's cache: " + received.keySet());
      assertEquals("gzip", packument.path("content-encoding").asText(null), p.name() + ": " + packument);
      JsonNode tarball = received.get(corral + "/install" + p.tarballPath());
      assertTrue(tarball != null, p.tarballPath() + " in npm's cache: " + received.keySet());
      assertFalse(tarball.has("content-encoding"), p.tarballPath() + ": " + tarball);
    }
  }

  /**
   * {@code npm ci} from a lockfile asks for tarballs only. Against a repository with no packument
   * cached, each tarball's fetch reads its packument through the cache (once) for the digest that
   * verifies it (K1, B1), then fetches it from the registry's standard path; npm checks it
   * against the lockfile's integrity too.
   */
  @Test
  void npmCiFromALockfileFetchesEachTarballOnceVerifiedByItsPackument() throws Exception {
    install("install", "locked").ok();
    Path dir = work.resolve("ci-app");
    Files.createDirectories(dir);
    Files.copy(work.resolve("locked/package.json"), dir.resolve("package.json"));
    String lock = Files.readString(work.resolve("locked/package-lock.json"));
    Files.writeString(dir.resolve("package-lock.json"), lock.replace(corral + "/install/", corral + "/ci/"));

    ClientCommand.Result r = ClientCommand.run(dir, npmEnv(), CLIENT_TIMEOUT, List.of("npm", "ci",
        "--registry", corral + "/ci/", "--cache", work.resolve("ci-cache").toString(), "--userconfig", "/dev/null",
        "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel", "http")).ok();
    assertInstalled("ci", "ci-app");
    FixtureRegistry fixture = fixtures.get("ci");
    for (Pkg p : PACKAGES) {
      assertEquals(1, fixture.count(p.packumentPath()), "the fetch read the packument once\n" + r.output());
      assertEquals(1, fixture.count(p.tarballPath()), p.tarballPath());
    }
    assertOnlyCorralAskedTheFixture(fixture);
  }

  @Test
  void threeInstallsAtOnceFetchEachFileOnceAndAReplayNeedsNoUpstream() throws Exception {
    FixtureRegistry fixture = fixtures.get("three");
    List<CompletableFuture<ClientCommand.Result>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      String project = "three" + i;
      runs.add(CompletableFuture.supplyAsync(() -> {
        try {
          return install("three", project);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }, pool));
    }
    for (int i = 0; i < 3; i++) {
      runs.get(i).get(CLIENT_TIMEOUT.toSeconds() + 10, TimeUnit.SECONDS).ok();
      assertInstalled("three", "three" + i);
    }
    assertOnlyCorralAskedTheFixture(fixture);
    assertEquals(Map.of(), fixture.repeated(), "every fixture path was requested once");
    assertEquals(2 * PACKAGES.size(), fixture.requests().size(), fixture.requests().toString());

    // warm cache, upstream gone: a fresh client still installs everything
    fixture.close();
    install("three", "replay").ok();
    assertInstalled("three", "replay");
  }

  @Test
  void tamperedTarballFailsTheInstallAndIsNeverCached() throws Exception {
    FixtureRegistry fixture = fixtures.get("tampered");
    byte[] good = tarballs.get("demo-dep");
    byte[] bad = good.clone();
    bad[bad.length / 2] ^= 0x20;
    // after the packument route, matching only the tarball's path
    fixture.route(r -> r.path().equals("/demo-dep/-/demo-dep-1.0.0.tgz")
        ? Optional.of(FixtureRegistry.Answer.of(200, "application/octet-stream", bad)) : Optional.empty());

    ClientCommand.Result r = install("tampered", "bad", "--fetch-retries=0");
    assertNotEquals(0, r.exit(), "npm must fail on tampered bytes\n" + r.output());
    assertTrue(r.output().contains("502"), r.output());
    assertFalse(Files.exists(work.resolve("bad/node_modules/demo-dep/index.js")));
    assertEquals(List.of(), ClientCommand.filesWithContent(work.resolve("data"), bad), "bad bytes stored");

    String goodHex = HexFormat.of().formatHex(digest("SHA-512", good));
    String badHex = HexFormat.of().formatHex(digest("SHA-512", bad));
    String log = node.stdout();
    assertTrue(log.lines().anyMatch(l -> l.contains("WARN") && l.contains("/demo-dep/-/demo-dep-1.0.0.tgz")
        && l.contains(goodHex) && l.contains(badHex)), "a warning names the key and both digests\n" + log);
  }
}
