package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code pip} client through a Corral process: {@code pip download demo-pkg==1.0.0}
 * (which requires {@code demo-dep}) from a simple index on 127.0.0.1 whose pages link the files
 * absolutely on the fixture (so an un-rewritten URL would bypass Corral), with {@code #sha256=}
 * and PEP 658 metadata hashes. {@code demo-pkg}'s page is PEP 691 JSON, {@code demo-dep}'s PEP
 * 503 HTML. The wheels are built by the test (a wheel is a zip; no build backend or index
 * needed). Each run has a fresh cache directory and no configuration.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PipClientIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofSeconds(90);
  private static final List<String> REPOS = List.of("install", "three", "tampered");

  /** One project: its wheel and the wheel's METADATA (served as {@code <wheel>.metadata}). */
  record Project(String name, String module, String requires, byte[] wheel, byte[] metadata) {
    String wheelName() {
      return module + "-1.0.0-py3-none-any.whl";
    }
  }

  private final Map<String, Project> projects = new LinkedHashMap<>();
  private final Map<String, FixtureRegistry> fixtures = new LinkedHashMap<>();
  private final ExecutorService pool = Executors.newFixedThreadPool(3);
  private Path work;
  private CorralProcess node;
  private String corral;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    ClientCommand.require("python3", "python3", "PipClientIT");
    if (!ClientCommand.onPath("pip3")) {
      ClientCommand.require("pip3", "python3-pip", "PipClientIT");
    }
    ClientCommand.run(dir, Map.of(), CLIENT_TIMEOUT, List.of("python3", "-m", "pip", "--version")).ok();
    work = dir;
    projects.putAll(projects());
    List<String> repos = new ArrayList<>();
    for (String repo : REPOS) {
      FixtureRegistry f = fixture(work.resolve("upstream-" + repo));
      fixtures.put(repo, f);
      repos.add(repo + "=pypi:" + f.url() + "/simple/");
    }
    node = CorralProcess.serve("pip-clients", List.of(), work.resolve("data"), List.of(), repos.toArray(String[]::new));
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

  /** demo-pkg (requires demo-dep) and demo-dep, by name. */
  static Map<String, Project> projects() throws IOException {
    Map<String, Project> out = new LinkedHashMap<>();
    for (Project p : List.of(project("demo-pkg", "demo_pkg", "demo-dep>=1.0"), project("demo-dep", "demo_dep", null))) {
      out.put(p.name(), p);
    }
    return out;
  }

  /** A pure-Python wheel: a package, METADATA, WHEEL and a RECORD with the files' hashes. */
  private static Project project(String name, String module, String requires) throws IOException {
    String dist = module + "-1.0.0.dist-info/";
    byte[] metadata = ("Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0.0\nRequires-Python: >=3.7\n"
        + (requires == null ? "" : "Requires-Dist: " + requires + "\n")).getBytes(StandardCharsets.UTF_8);
    Map<String, byte[]> files = new LinkedHashMap<>();
    files.put(module + "/__init__.py", ("NAME = '" + name + "'\n").getBytes(StandardCharsets.UTF_8));
    files.put(dist + "METADATA", metadata);
    files.put(dist + "WHEEL", "Wheel-Version: 1.0\nGenerator: corral-it\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        .getBytes(StandardCharsets.UTF_8));
    StringBuilder record = new StringBuilder();
    for (Map.Entry<String, byte[]> e : files.entrySet()) {
      String hash = Base64.getUrlEncoder().withoutPadding().encodeToString(
          java.util.HexFormat.of().parseHex(ClientCommand.sha256(e.getValue())));
      record.append(e.getKey()).append(",sha256=").append(hash).append(',').append(e.getValue().length).append('\n');
    }
    record.append(dist).append("RECORD,,\n");
    files.put(dist + "RECORD", record.toString().getBytes(StandardCharsets.UTF_8));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(out)) {
      for (Map.Entry<String, byte[]> e : files.entrySet()) {
        ZipEntry entry = new ZipEntry(e.getKey());
        entry.setTime(1_700_000_000_000L);
        zip.putNextEntry(entry);
        zip.write(e.getValue());
        zip.closeEntry();
      }
    }
    return new Project(name, module, requires, out.toByteArray(), metadata);
  }

  /** The files under /files/, and the two projects' pages: demo-pkg as JSON, demo-dep as HTML. */
  private FixtureRegistry fixture(Path root) throws IOException {
    return fixture(projects, root);
  }

  static FixtureRegistry fixture(Map<String, Project> projects, Path root) throws IOException {
    FixtureRegistry fixture = new FixtureRegistry(root);
    Map<String, FixtureRegistry.Answer> pages = new LinkedHashMap<>();
    for (Project p : projects.values()) {
      Path files = root.resolve("files");
      Files.createDirectories(files);
      Files.write(files.resolve(p.wheelName()), p.wheel());
      Files.write(files.resolve(p.wheelName() + ".metadata"), p.metadata());
      String url = fixture.url() + "/files/" + p.wheelName();
      String wheelHash = ClientCommand.sha256(p.wheel());
      String metaHash = ClientCommand.sha256(p.metadata());
      if (p.name().equals("demo-pkg")) {
        String json = """
            {"meta":{"api-version":"1.0"},"name":"%s","files":[{"filename":"%s","url":"%s",
             "hashes":{"sha256":"%s"},"requires-python":">=3.7","core-metadata":{"sha256":"%s"},
             "dist-info-metadata":{"sha256":"%s"}}]}
            """.formatted(p.name(), p.wheelName(), url, wheelHash, metaHash, metaHash);
        pages.put("/simple/" + p.name() + "/", FixtureRegistry.Answer.of(200, "application/vnd.pypi.simple.v1+json",
            json.getBytes(StandardCharsets.UTF_8)));
      } else {
        String html = """
            <!DOCTYPE html>
            <html><body><h1>Links for %s</h1>
            <a href="%s#sha256=%s" data-requires-python="&gt;=3.7" data-core-metadata="sha256=%s" data-dist-info-metadata="sha256=%s">%s</a><br/>
            </body></html>
            """.formatted(p.name(), url, wheelHash, metaHash, metaHash, p.wheelName());
        pages.put("/simple/" + p.name() + "/", FixtureRegistry.Answer.of(200, "text/html; charset=utf-8",
            html.getBytes(StandardCharsets.UTF_8)));
      }
    }
    fixture.route(r -> Optional.ofNullable(pages.get(r.path())));
    return fixture;
  }

  /** {@code pip download demo-pkg==1.0.0} (and its dependency) with no configuration and a fresh cache. */
  private ClientCommand.Result download(String repo, String run) throws Exception {
    return download(corral + "/" + repo, work.resolve(run));
  }

  /** The same from {@code repoUrl}, run in {@code dir} (cache and output under it). */
  static ClientCommand.Result download(String repoUrl, Path dir) throws Exception {
    Files.createDirectories(dir);
    return ClientCommand.run(dir, Map.of("PIP_CONFIG_FILE", "/dev/null"), CLIENT_TIMEOUT, List.of(
        "python3", "-m", "pip", "--isolated", "--disable-pip-version-check", "-vv", "download",
        "--cache-dir", dir.resolve("cache").toString(), "--retries", "0", "--timeout", "60",
        "--index-url", repoUrl + "/", "-d", dir.resolve("out").toString(), "demo-pkg==1.0.0"));
  }

  private void assertDownloaded(String run, ClientCommand.Result r) throws IOException {
    assertDownloaded(projects, work.resolve(run), r);
  }

  static void assertDownloaded(Map<String, Project> projects, Path dir, ClientCommand.Result r) throws IOException {
    for (Project p : projects.values()) {
      Path file = dir.resolve("out").resolve(p.wheelName());
      assertTrue(Files.exists(file), p.wheelName() + " downloaded\n" + r.output());
      assertArrayEquals(p.wheel(), Files.readAllBytes(file));
    }
  }

  static void assertOnlyCorralAskedTheFixture(FixtureRegistry fixture) {
    for (FixtureRegistry.Request r : fixture.requests()) {
      assertFalse(r.header("User-Agent").orElse("").startsWith("pip/"), "pip reached the fixture directly: " + r);
    }
  }

  private List<String> fixturePaths() {
    return fixturePaths(projects);
  }

  static List<String> fixturePaths(Map<String, Project> projects) {
    List<String> out = new ArrayList<>();
    for (Project p : projects.values()) {
      out.add("/simple/" + p.name() + "/");
      out.add("/files/" + p.wheelName() + ".metadata");
      out.add("/files/" + p.wheelName());
    }
    return out;
  }

  @Test
  void downloadGoesThroughCorralWithBothPageForms() throws Exception {
    FixtureRegistry fixture = fixtures.get("install");
    ClientCommand.Result r = download("install", "one").ok();
    assertDownloaded("one", r);
    assertOnlyCorralAskedTheFixture(fixture);
    for (String path : fixturePaths()) {
      assertEquals(1, fixture.count(path), path + "\n" + r.output());
    }
    assertEquals(Map.of(), fixture.repeated());
    assertTrue(r.output().contains("as application/vnd.pypi.simple.v1+json"), "the JSON page reached pip\n" + r.output());
    assertTrue(r.output().contains("as text/html"), "the HTML page reached pip\n" + r.output());
    assertTrue(r.output().contains(corral + "/install/-/files/demo-pkg/" + projects.get("demo-pkg").wheelName()),
        "files come from Corral\n" + r.output());
  }

  @Test
  void threeDownloadsAtOnceFetchEachFileOnceAndAReplayNeedsNoUpstream() throws Exception {
    FixtureRegistry fixture = fixtures.get("three");
    List<CompletableFuture<ClientCommand.Result>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      String run = "three" + i;
      runs.add(CompletableFuture.supplyAsync(() -> {
        try {
          return download("three", run);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }, pool));
    }
    for (int i = 0; i < 3; i++) {
      assertDownloaded("three" + i, runs.get(i).get(CLIENT_TIMEOUT.toSeconds() + 10, TimeUnit.SECONDS).ok());
    }
    assertOnlyCorralAskedTheFixture(fixture);
    assertEquals(Map.of(), fixture.repeated(), "every fixture path was requested once");
    assertEquals(fixturePaths().size(), fixture.requests().size(), fixture.requests().toString());

    fixture.close();
    assertDownloaded("replay", download("three", "replay").ok());
  }

  @Test
  void tamperedWheelFailsTheDownloadAndIsNeverCached() throws Exception {
    FixtureRegistry fixture = fixtures.get("tampered");
    Project dep = projects.get("demo-dep");
    byte[] bad = dep.wheel().clone();
    bad[bad.length / 2] ^= 0x20;
    fixture.route(r -> r.path().equals("/files/" + dep.wheelName())
        ? Optional.of(FixtureRegistry.Answer.of(200, "application/octet-stream", bad)) : Optional.empty());

    ClientCommand.Result r = download("tampered", "bad");
    assertNotEquals(0, r.exit(), "pip must fail on tampered bytes\n" + r.output());
    assertTrue(r.output().contains("502"), r.output());
    assertFalse(Files.exists(work.resolve("bad/out").resolve(dep.wheelName())));
    assertEquals(List.of(), ClientCommand.filesWithContent(work.resolve("data"), bad), "bad bytes stored");

    String goodHex = ClientCommand.sha256(dep.wheel());
    String badHex = ClientCommand.sha256(bad);
    String log = node.stdout();
    assertTrue(log.lines().anyMatch(l -> l.contains("WARN") && l.contains("/files/" + dep.wheelName())
        && l.contains(goodHex) && l.contains(badHex)), "a warning names the key and both digests\n" + log);
  }
}
