package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.testkit.Await;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real poetry (Debian's {@code python3-poetry}) through a Corral process: {@code poetry
 * install} of a project depending on {@code demo-pkg} (which requires {@code demo-dep}) from a
 * simple index on 127.0.0.1 that answers PEP 691 JSON or PEP 503 HTML by {@code Accept} and links
 * its files absolutely on itself, so an un-rewritten link would bypass Corral. Corral is the
 * project's only source ({@code default = true}, which turns the public index off); poetry runs
 * with its own home, config, cache and in-project virtualenv, no keyring and no pip or setuptools
 * seeded into the virtualenv, under strace: a connection to anything but loopback fails the test.
 * A second install from a fresh project with an empty cache must make no request upstream and be
 * answered only from Corral's cache.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PoetryClientIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofSeconds(120);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Inherited variables that would steer poetry, pip, virtualenv or Python elsewhere. */
  private static final List<String> DROPPED = List.of("POETRY_", "PIP_", "VIRTUALENV_", "VIRTUAL_ENV", "PYTHON",
      "XDG_", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "REQUESTS_CA_BUNDLE");

  private final Map<String, PipClientIT.Project> projects = new LinkedHashMap<>();
  private FixtureRegistry fixture;
  private Path work;
  private Path accessLog;
  private CorralProcess node;
  private String corral;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    ClientCommand.require("poetry", "python3-poetry", "PoetryClientIT");
    work = dir;
    projects.putAll(PipClientIT.projects());
    fixture = index(work.resolve("upstream"));
    accessLog = work.resolve("access.json");
    node = CorralProcess.serve("poetry-clients", List.of(), work.resolve("data"),
        List.of("--access-log", accessLog.toString(), "--access-log-format", "json"),
        "poetry=pypi:" + fixture.url() + "/simple/");
    corral = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
    if (fixture != null) {
      fixture.close();
    }
  }

  /** A simple index serving each project's page as JSON or HTML by the request's Accept. */
  private FixtureRegistry index(Path root) throws IOException {
    FixtureRegistry index = new FixtureRegistry(root);
    Map<String, String> json = new LinkedHashMap<>();
    Map<String, String> html = new LinkedHashMap<>();
    Files.createDirectories(root.resolve("files"));
    for (PipClientIT.Project p : projects.values()) {
      Files.write(root.resolve("files").resolve(p.wheelName()), p.wheel());
      String url = index.url() + "/files/" + p.wheelName();
      String hash = ClientCommand.sha256(p.wheel());
      String page = "/simple/" + p.name() + "/";
      json.put(page, """
          {"meta":{"api-version":"1.0"},"name":"%s","files":[{"filename":"%s","url":"%s",
           "hashes":{"sha256":"%s"},"requires-python":">=3.7"}]}
          """.formatted(p.name(), p.wheelName(), url, hash));
      html.put(page, """
          <!DOCTYPE html>
          <html><body><h1>Links for %s</h1>
          <a href="%s#sha256=%s" data-requires-python="&gt;=3.7">%s</a><br/>
          </body></html>
          """.formatted(p.name(), url, hash, p.wheelName()));
    }
    index.route(r -> {
      boolean asksJson = r.header("Accept").orElse("").contains("application/vnd.pypi.simple.v1+json");
      return Optional.ofNullable((asksJson ? json : html).get(r.path())).map(body -> FixtureRegistry.Answer.of(200,
          asksJson ? "application/vnd.pypi.simple.v1+json" : "text/html; charset=utf-8",
          body.getBytes(StandardCharsets.UTF_8)));
    });
    return index;
  }

  /** {@code poetry install --no-root} of a new project whose only source is Corral. */
  private ClientCommand.Result install(String name) throws Exception {
    Path dir = work.resolve(name);
    Path home = dir.resolve("home");
    Files.createDirectories(home);
    Files.writeString(dir.resolve("pyproject.toml"), """
        [tool.poetry]
        name = "%s"
        version = "0.1.0"
        description = "a project installed through Corral"
        authors = ["Corral tests <tests@corral.invalid>"]

        [tool.poetry.dependencies]
        python = "^3.7"
        demo-pkg = "1.0.0"

        [[tool.poetry.source]]
        name = "corral"
        url = "%s/poetry/"
        default = true

        [build-system]
        requires = ["poetry-core"]
        build-backend = "poetry.core.masonry.api"
        """.formatted(name, corral));
    Map<String, String> env = new LinkedHashMap<>();
    env.put("HOME", home.toString());
    env.put("XDG_CONFIG_HOME", home.resolve(".config").toString());
    env.put("XDG_CACHE_HOME", home.resolve(".cache").toString());
    env.put("XDG_DATA_HOME", home.resolve(".local/share").toString());
    env.put("POETRY_CONFIG_DIR", home.resolve("poetry-config").toString());
    env.put("POETRY_CACHE_DIR", dir.resolve("poetry-cache").toString());
    env.put("POETRY_VIRTUALENVS_IN_PROJECT", "true");
    // a virtualenv with nothing seeded: poetry installs the wheels with its embedded pip
    env.put("POETRY_VIRTUALENVS_OPTIONS_NO_PIP", "true");
    env.put("POETRY_VIRTUALENVS_OPTIONS_NO_SETUPTOOLS", "true");
    env.put("VIRTUALENV_NO_PERIODIC_UPDATE", "true");
    env.put("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring");
    env.put("PIP_CONFIG_FILE", "/dev/null");
    env.put("PIP_NO_INDEX", "1");
    return ClientCommand.runLoopbackOnly(dir, env, DROPPED, CLIENT_TIMEOUT,
        List.of("poetry", "install", "--no-root", "--no-interaction", "-vv"));
  }

  /**
   * Both projects import from the virtualenv, their files there are byte for byte the wheels'
   * (but RECORD, which an installer rewrites), and poetry.lock names each wheel's digest and
   * Corral as the source.
   */
  private void assertInstalled(String name, ClientCommand.Result r) throws Exception {
    Path dir = work.resolve(name);
    ClientCommand.Result imported = ClientCommand.run(dir, Map.of(), CLIENT_TIMEOUT, List.of(
        dir.resolve(".venv/bin/python").toString(), "-c", "import demo_pkg, demo_dep; print(demo_pkg.NAME, demo_dep.NAME)"))
        .ok();
    assertEquals("demo-pkg demo-dep", imported.output().trim(), r.output());
    Path sitePackages;
    try (Stream<Path> libs = Files.list(dir.resolve(".venv/lib"))) {
      sitePackages = libs.findFirst().orElseThrow().resolve("site-packages");
    }
    for (PipClientIT.Project p : projects.values()) {
      for (Map.Entry<String, byte[]> f : wheelFiles(p.wheel()).entrySet()) {
        if (!f.getKey().endsWith("/RECORD")) {
          Path installed = sitePackages.resolve(f.getKey());
          assertTrue(Files.isRegularFile(installed), installed + "\n" + r.output());
          assertArrayEquals(f.getValue(), Files.readAllBytes(installed), installed.toString());
        }
      }
    }
    String lock = Files.readString(dir.resolve("poetry.lock"));
    for (PipClientIT.Project p : projects.values()) {
      assertTrue(lock.contains("{file = \"" + p.wheelName() + "\", hash = \"sha256:" + ClientCommand.sha256(p.wheel())
          + "\"}"), p.wheelName() + "'s digest in poetry.lock\n" + lock);
    }
    assertTrue(lock.contains("url = \"" + corral + "/poetry\""), "Corral as the source in poetry.lock\n" + lock);
  }

  private static Map<String, byte[]> wheelFiles(byte[] wheel) throws IOException {
    Map<String, byte[]> out = new LinkedHashMap<>();
    try (ZipInputStream zip = new ZipInputStream(new ByteArrayInputStream(wheel))) {
      for (ZipEntry e = zip.getNextEntry(); e != null; e = zip.getNextEntry()) {
        out.put(e.getName(), zip.readAllBytes());
      }
    }
    return out;
  }

  /** The page and file paths under {@code /poetry} that an install asks Corral for. */
  private Set<String> corralPaths() {
    Set<String> out = new TreeSet<>();
    for (PipClientIT.Project p : projects.values()) {
      out.add("/poetry/" + p.name() + "/");
      out.add("/poetry/-/files/" + p.name() + "/" + p.wheelName());
    }
    return out;
  }

  /** The access-log lines from line {@code from} on, once they cover {@link #corralPaths}. */
  private List<JsonNode> awaitAccess(int from) throws Exception {
    List<JsonNode> lines = new ArrayList<>();
    Await.until(Duration.ofSeconds(20), () -> "access lines for every page and file from line " + from + ":\n" + lines,
        () -> {
          lines.clear();
          List<String> all = ClientCommand.completeLines(accessLog);
          for (String line : all.subList(Math.min(from, all.size()), all.size())) {
            lines.add(JSON.readTree(line));
          }
          Set<String> seen = new TreeSet<>();
          lines.forEach(l -> seen.add(l.get("path").asText()));
          return seen.containsAll(corralPaths());
        });
    return lines;
  }

  @Test
  void poetryInstallsThroughCorralAndAnEmptyCacheInstallsAgainWithNoUpstreamRequest() throws Exception {
    ClientCommand.Result first = install("first").ok();
    assertInstalled("first", first);
    for (PipClientIT.Project p : projects.values()) {
      assertEquals(1, fixture.count("/simple/" + p.name() + "/"), p.name() + "'s page\n" + first.output());
      assertEquals(1, fixture.count("/files/" + p.wheelName()), p.wheelName() + "\n" + first.output());
    }
    assertEquals(2 * projects.size(), fixture.requests().size(), fixture.requests().toString());
    for (FixtureRegistry.Request q : fixture.requests()) {
      assertTrue(q.header("User-Agent").orElse("").startsWith("corral/"), "only Corral asked the index: " + q);
    }
    awaitAccess(0);

    int upstream = fixture.requests().size();
    int from = ClientCommand.completeLines(accessLog).size();
    ClientCommand.Result second = install("second").ok();
    assertInstalled("second", second);
    List<FixtureRegistry.Request> all = fixture.requests();
    assertEquals(List.of(), all.subList(upstream, all.size()).stream().map(FixtureRegistry.Request::path).toList(),
        "the second install made requests upstream\n" + second.output());
    for (JsonNode line : awaitAccess(from)) {
      assertEquals(200, line.get("status").intValue(), line.toString());
      assertEquals("HIT", line.get("cache").asText(), line.toString());
      assertEquals("poetry", line.get("repo").asText(), line.toString());
    }
  }
}
