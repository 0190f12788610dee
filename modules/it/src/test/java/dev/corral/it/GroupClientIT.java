package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Group repositories (issue 16) with the real {@code mvn}, {@code npm} and {@code pip}, through
 * one Corral process, each group over two fixture upstreams on 127.0.0.1 whose metadata differs
 * and where an artifact exists only in the second:
 *
 * <ul>
 *   <li>maven {@code mvn} = group of {@code mfirst} (demo-lib 1.0.0, demo-base, Maven's plugins)
 *       and {@code msecond} (demo-lib 1.5.0 only, its own {@code maven-metadata.xml}): the range
 *       {@code [1.0,2.0)} resolves to 1.5.0 only through the merged metadata, with strict checksums
 *       ({@code -C}), so the metadata's {@code .sha1} must be that of the merged bytes;
 *   <li>npm {@code npm} = group of {@code nfirst} ({@code @demo/scoped}, {@code demo-pkg} 1.0.0)
 *       and {@code nsecond} ({@code demo-dep}, and a {@code demo-pkg} packument naming only a
 *       1.0.1 that has no tarball): the first member that has a package wins, so demo-pkg 1.0.0 is
 *       installed, and demo-dep comes from the second, verified against its packument;
 *   <li>pypi {@code py} = group of {@code pfirst} (demo-pkg's page naming only a 0.9.0 wheel,
 *       demo-dep) and {@code psecond} (demo-pkg's page naming the 1.0.0 wheel): {@code pip download
 *       demo-pkg==1.0.0} finds it only in the union of the pages;
 *   <li>go {@code goproxy} = group of {@code gfirst} ({@code example.com/demo} v1.0.0) and
 *       {@code gsecond} (v1.1.0 only): {@code go mod download example.com/demo@latest} picks v1.1.0
 *       from the union of the {@code @v/list}s and downloads it from the second.
 * </ul>
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GroupClientIT {
  private Path work;
  private final Map<String, FixtureRegistry> fixtures = new LinkedHashMap<>();
  private CorralProcess node;
  private String corral;
  private final Map<String, PipClientIT.Project> projects = new LinkedHashMap<>();

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    work = dir;
    List<String> repos = new ArrayList<>();
    // maven
    fixtures.put("mfirst", MavenClientIT.fixture(work.resolve("mfirst")));
    fixtures.put("msecond", secondMaven(work.resolve("msecond")));
    // npm
    NpmClientIT.pack(work.resolve("packed"));
    fixtures.put("nfirst", npm(work.resolve("nfirst"), true));
    fixtures.put("nsecond", npm(work.resolve("nsecond"), false));
    // pypi
    ClientCommand.require("python3", "python3", "GroupClientIT");
    projects.putAll(PipClientIT.projects());
    fixtures.put("pfirst", pypi(work.resolve("pfirst"), true));
    fixtures.put("psecond", pypi(work.resolve("psecond"), false));
    // go: example.com/demo v1.0.0 in the first, v1.1.0 only in the second
    ClientCommand.require("go", "golang-go", "GroupClientIT");
    fixtures.put("gfirst", goProxy(work.resolve("gfirst"), "v1.0.0"));
    fixtures.put("gsecond", goProxy(work.resolve("gsecond"), "v1.1.0"));
    for (Map.Entry<String, FixtureRegistry> f : fixtures.entrySet()) {
      String type = switch (f.getKey().charAt(0)) {
        case 'm' -> "maven";
        case 'n' -> "npm";
        case 'g' -> "go";
        default -> "pypi";
      };
      repos.add(f.getKey() + "=" + type + ":" + f.getValue().url() + (type.equals("pypi") ? "/simple/" : "/"));
    }
    repos.add("mvn=group:mfirst,msecond");
    repos.add("npm=group:nfirst,nsecond");
    repos.add("py=group:pfirst,psecond");
    repos.add("goproxy=group:gfirst,gsecond");
    node = CorralProcess.serve("group-clients", List.of(), work.resolve("data"), List.of(), repos.toArray(String[]::new));
    corral = node.awaitListening(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    if (node != null) {
      node.close();
    }
    fixtures.values().forEach(FixtureRegistry::close);
  }

  // ---- maven ----------------------------------------------------------------------------------------

  private static final String LIB = "/com/example/demo-lib";

  /** demo-lib 1.5.0 (depending on demo-base 1.0.0, which only the first has) and metadata naming 1.5.0 alone. */
  private static FixtureRegistry secondMaven(Path dir) throws Exception {
    Path root = Files.createDirectories(dir.resolve("upstream"));
    MavenClientIT.publish(root, "com/example/demo-lib/1.5.0/demo-lib-1.5.0.jar", MavenClientIT.jar("demo/lib.txt", "lib 1.5.0"));
    MavenClientIT.publish(root, "com/example/demo-lib/1.5.0/demo-lib-1.5.0.pom", """
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>com.example</groupId><artifactId>demo-lib</artifactId><version>1.5.0</version>
          <dependencies>%s</dependencies>
        </project>
        """.formatted(MavenClientIT.dependency("demo-base", "1.0.0")).getBytes(UTF_8));
    MavenClientIT.publish(root, "com/example/demo-lib/maven-metadata.xml", """
        <?xml version="1.0" encoding="UTF-8"?>
        <metadata><groupId>com.example</groupId><artifactId>demo-lib</artifactId>
          <versioning><latest>1.5.0</latest><release>1.5.0</release>
            <versions><version>1.5.0</version></versions><lastUpdated>20261203100000</lastUpdated></versioning>
        </metadata>
        """.getBytes(UTF_8));
    return new FixtureRegistry(root).type(".pom", "text/xml").type(".xml", "text/xml");
  }

  @Test
  void mvnResolvesAVersionOnlyTheSecondMemberHasThroughTheMergedMetadata() throws Exception {
    Path dir = work.resolve("mvn-client");
    MavenClientIT.clients(dir, corral + "/mvn/");
    ClientRun r = MavenClientIT.mvn(dir, "consumer", dir.resolve("local"));
    assertEquals(0, r.exitCode(), r.describe() + node.output());
    assertTrue(r.output().contains("BUILD SUCCESS"), r.describe());
    Path jar = dir.resolve("local/com/example/demo-lib/1.5.0/demo-lib-1.5.0.jar");
    assertTrue(Files.isRegularFile(jar), "the range resolved to 1.5.0, which only the second member lists\n" + r.describe());
    assertTrue(Files.isRegularFile(dir.resolve("local/com/example/demo-base/1.0.0/demo-base-1.0.0.jar")),
        "its dependency came from the first member");
    FixtureRegistry first = fixtures.get("mfirst");
    FixtureRegistry second = fixtures.get("msecond");
    assertEquals(1, first.count(LIB + "/maven-metadata.xml"));
    assertEquals(1, second.count(LIB + "/maven-metadata.xml"));
    assertEquals(1, first.count(LIB + "/1.5.0/demo-lib-1.5.0.jar"), "the first member was asked once (404)");
    assertEquals(1, second.count(LIB + "/1.5.0/demo-lib-1.5.0.jar"));
    assertEquals(1, second.count(LIB + "/1.5.0/demo-lib-1.5.0.jar.sha1"), "verified against the second member's .sha1");

    String merged = get(corral + "/mvn" + LIB + "/maven-metadata.xml").body();
    assertTrue(merged.contains("<version>1.0.0</version>") && merged.contains("<version>1.5.0</version>")
        && merged.contains("<latest>1.5.0</latest>") && merged.contains("<lastUpdated>20261203100000</lastUpdated>"),
        merged);
  }

  // ---- npm ----------------------------------------------------------------------------------------------

  /**
   * The first: @demo/scoped and demo-pkg 1.0.0; the second: demo-dep, and a demo-pkg packument
   * naming only 1.0.1, whose tarball it does not have.
   */
  private static FixtureRegistry npm(Path root, boolean first) throws Exception {
    FixtureRegistry fixture = new FixtureRegistry(root);
    Map<String, byte[]> packuments = new LinkedHashMap<>();
    for (NpmClientIT.Pkg p : NpmClientIT.PACKAGES) {
      boolean here = first ? !p.name().equals("demo-dep") : p.name().equals("demo-dep");
      if (!here) {
        continue;
      }
      Path file = fixture.root().resolve(p.tarballPath().substring(1));
      Files.createDirectories(file.getParent());
      Files.write(file, NpmClientIT.tarballs.get(p.name()));
      packuments.put(p.packumentPath(), NpmClientIT.packument(p, fixture.url() + p.tarballPath()).getBytes(UTF_8));
    }
    if (!first) {
      packuments.put("/demo-pkg", """
          {"_id":"demo-pkg","name":"demo-pkg","dist-tags":{"latest":"1.0.1"},
           "versions":{"1.0.1":{"name":"demo-pkg","version":"1.0.1","main":"index.js","license":"MIT",
             "dist":{"tarball":"%s/demo-pkg/-/demo-pkg-1.0.1.tgz",
               "integrity":"sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="}}}}
          """.formatted(fixture.url()).getBytes(UTF_8));
    }
    fixture.route(r -> Optional.ofNullable(packuments.get(r.path()))
        .map(body -> FixtureRegistry.Answer.of(200, "application/json", body)));
    return fixture;
  }

  @Test
  void npmInstallsFromTheFirstMemberThatHasEachPackageAndTarballsOnlyInTheSecond() throws Exception {
    ClientCommand.Result r = NpmClientIT.install(corral + "/npm", work.resolve("npm-app"), work.resolve("npm-cache")).ok();
    NpmClientIT.assertInstalled(corral + "/npm", work.resolve("npm-app"));
    FixtureRegistry first = fixtures.get("nfirst");
    FixtureRegistry second = fixtures.get("nsecond");
    assertEquals(0, second.count("/demo-pkg"), "the first member has demo-pkg: the second is not asked\n" + r.output());
    assertEquals(1, first.count("/demo-dep"), "the first member's not-found for demo-dep was asked once");
    assertEquals(1, second.count("/demo-dep"));
    assertEquals(1, second.count("/demo-dep/-/demo-dep-1.0.0.tgz"));
    NpmClientIT.assertOnlyCorralAskedTheFixture(first);
    NpmClientIT.assertOnlyCorralAskedTheFixture(second);
    String packument = get(corral + "/npm/demo-dep").body();
    assertTrue(packument.contains("\"tarball\":\"" + corral + "/npm/demo-dep/-/demo-dep-1.0.0.tgz\""),
        "the second member's tarball URLs point back at the group\n" + packument);
  }

  // ---- pip ----------------------------------------------------------------------------------------------

  /**
   * The first: demo-pkg's page (JSON) naming only a 0.9.0 wheel, and demo-dep's (HTML) with its
   * wheel; the second: demo-pkg's page naming the 1.0.0 wheel, which only it has.
   */
  private FixtureRegistry pypi(Path root, boolean first) throws Exception {
    FixtureRegistry fixture = new FixtureRegistry(root);
    Map<String, FixtureRegistry.Answer> pages = new LinkedHashMap<>();
    Path files = Files.createDirectories(root.resolve("files"));
    PipClientIT.Project pkg = projects.get("demo-pkg");
    PipClientIT.Project dep = projects.get("demo-dep");
    if (first) {
      String json = """
          {"meta":{"api-version":"1.0"},"name":"demo-pkg","files":[{"filename":"demo_pkg-0.9.0-py3-none-any.whl",
           "url":"%s/files/demo_pkg-0.9.0-py3-none-any.whl","hashes":{"sha256":"%s"}}]}
          """.formatted(fixture.url(), "0".repeat(64));
      pages.put("/simple/demo-pkg/", FixtureRegistry.Answer.of(200, "application/vnd.pypi.simple.v1+json", json.getBytes(UTF_8)));
      Files.write(files.resolve(dep.wheelName()), dep.wheel());
      String html = """
          <!DOCTYPE html>
          <html><body><h1>Links for demo-dep</h1>
          <a href="%s/files/%s#sha256=%s" data-requires-python="&gt;=3.7">%s</a><br/>
          </body></html>
          """.formatted(fixture.url(), dep.wheelName(), ClientCommand.sha256(dep.wheel()), dep.wheelName());
      pages.put("/simple/demo-dep/", FixtureRegistry.Answer.of(200, "text/html; charset=utf-8", html.getBytes(UTF_8)));
    } else {
      Files.write(files.resolve(pkg.wheelName()), pkg.wheel());
      Files.write(files.resolve(pkg.wheelName() + ".metadata"), pkg.metadata());
      String json = """
          {"meta":{"api-version":"1.0"},"name":"demo-pkg","files":[{"filename":"%s","url":"%s/files/%s",
           "hashes":{"sha256":"%s"},"requires-python":">=3.7","core-metadata":{"sha256":"%s"}}]}
          """.formatted(pkg.wheelName(), fixture.url(), pkg.wheelName(), ClientCommand.sha256(pkg.wheel()),
          ClientCommand.sha256(pkg.metadata()));
      pages.put("/simple/demo-pkg/", FixtureRegistry.Answer.of(200, "application/vnd.pypi.simple.v1+json", json.getBytes(UTF_8)));
    }
    fixture.route(r -> Optional.ofNullable(pages.get(r.path())));
    return fixture;
  }

  @Test
  void pipDownloadsAWheelOnlyTheSecondMemberListsThroughTheUnionOfThePages() throws Exception {
    Path dir = work.resolve("pip-run");
    ClientCommand.Result r = PipClientIT.download(corral + "/py", dir).ok();
    for (PipClientIT.Project p : projects.values()) {
      Path file = dir.resolve("out").resolve(p.wheelName());
      assertTrue(Files.exists(file), p.wheelName() + " downloaded\n" + r.output());
      assertArrayEquals(p.wheel(), Files.readAllBytes(file));
    }
    FixtureRegistry first = fixtures.get("pfirst");
    FixtureRegistry second = fixtures.get("psecond");
    assertEquals(1, second.count("/files/" + projects.get("demo-pkg").wheelName()));
    assertEquals(0, first.count("/files/demo_pkg-0.9.0-py3-none-any.whl"), "pip took 1.0.0, not 0.9.0");
    assertEquals(1, first.count("/simple/demo-pkg/"));
    assertEquals(1, second.count("/simple/demo-pkg/"));
    assertEquals(1, first.count("/files/" + projects.get("demo-dep").wheelName()));
    PipClientIT.assertOnlyCorralAskedTheFixture(first);
    PipClientIT.assertOnlyCorralAskedTheFixture(second);
    String page = get(corral + "/py/demo-pkg/", "Accept", "application/vnd.pypi.simple.v1+json").body();
    assertTrue(page.contains("demo_pkg-0.9.0-py3-none-any.whl") && page.contains(projects.get("demo-pkg").wheelName())
        && page.contains(corral + "/py/-/files/demo-pkg/"), page);
  }

  // ---- go ---------------------------------------------------------------------------------------------

  private final Map<String, String[]> goSums = new java.util.concurrent.ConcurrentHashMap<>();

  private FixtureRegistry goProxy(Path dir, String version) throws Exception {
    Path root = Files.createDirectories(dir.resolve("upstream"));
    GoClientIT.module(root, "example.com/demo", "example.com/demo", List.of(version), goSums);
    return new FixtureRegistry(root).type(".info", "application/json").type("list", "text/plain");
  }

  @Test
  void goDownloadsTheLatestVersionOnlyTheSecondMemberHasThroughTheUnionOfTheLists() {
    ClientRun r = GoClientIT.download(corral + "/goproxy", work.resolve("go-home"), List.of("example.com/demo@latest"));
    assertEquals(0, r.exitCode(), r.describe() + node.output());
    assertTrue(r.output().contains("\"Version\": \"v1.1.0\""), "latest is v1.1.0, listed only by the second\n" + r.describe());
    assertTrue(r.output().contains("\"Sum\": \"" + goSums.get("example.com/demo@v1.1.0")[0] + "\""), r.describe());
    FixtureRegistry first = fixtures.get("gfirst");
    FixtureRegistry second = fixtures.get("gsecond");
    assertEquals(1, first.count("/example.com/demo/@v/list"));
    assertEquals(1, second.count("/example.com/demo/@v/list"));
    assertEquals(1, first.count("/example.com/demo/@v/v1.1.0.zip"), "the first member was asked once (404)");
    assertEquals(1, second.count("/example.com/demo/@v/v1.1.0.zip"));
  }

  // ---- plain HTTP ----------------------------------------------------------------------------------------

  private static HttpResponse<String> get(String url, String... headers) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30));
    for (int i = 0; i + 1 < headers.length; i += 2) {
      b.header(headers[i], headers[i + 1]);
    }
    HttpResponse<String> r = HttpClient.newHttpClient().send(b.build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url + ": " + r.body());
    return r;
  }
}
