package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code mvn} (a tiny project's {@code compile}, strict checksums {@code -C}, a fresh
 * local repository each run) against a maven repository of one Corral node, in front of a
 * file-layout fixture built here: {@code com.example:demo-lib:1.0.0} depending on
 * {@code demo-base:1.0.0}, asked for as the range {@code [1.0,2.0)} (so Maven reads
 * {@code maven-metadata.xml} and its {@code .sha1}), every file with {@code .sha1} and
 * {@code .md5}.
 *
 * <p>The build also needs Maven's own plugins (resources, compiler and their closure); the
 * fixture serves those from the local repository of the build running this test (read only),
 * with checksums computed on the fly, so the whole client session goes through Corral.
 *
 * <p>In order: three clients at once (every fixture path fetched once); a jar that does not match
 * its {@code .sha1} (the client fails, nothing cached, Corral logs both digests); the fixture
 * stopped and a fresh client replayed (all from Corral's cache).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MavenClientIT {
  static final Duration CLIENT_TIMEOUT = Duration.ofMinutes(3);
  private static final Path LOCAL_M2 = Path.of(System.getProperty("user.home"), ".m2", "repository");
  private static final String LIB = "/com/example/demo-lib";
  /** A client JVM that starts fast: these builds are short. */
  static final Map<String, String> MAVEN_ENV =
      Map.of("MAVEN_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xss1m");

  private Path dir;
  private FixtureRegistry fixture;
  private CorralProcess node;

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    fixture = fixture(dir);
    node = CorralProcess.serve("maven-it", List.of(), dir.resolve("data"), List.of(), "m2=maven:" + fixture.url() + "/");
    clients(dir, node.awaitListening(Duration.ofSeconds(60)) + "/m2/");
  }

  /**
   * The upstream: a file-layout repository under {@code dir/upstream} with demo-base, demo-lib
   * (and its maven-metadata.xml) and demo-bad (a jar not matching its .sha1), every file with
   * .sha1 and .md5, Maven's plugins served from this build's local repository.
   */
  static FixtureRegistry fixture(Path dir) throws Exception {
    ClientCommand.require("mvn", "maven", "MavenClientIT");
    Path root = Files.createDirectories(dir.resolve("upstream"));
    byte[] baseJar = jar("demo/base.txt", "base 1.0.0");
    byte[] libJar = jar("demo/lib.txt", "lib 1.0.0");
    publish(root, "com/example/demo-base/1.0.0/demo-base-1.0.0.jar", baseJar);
    publish(root, "com/example/demo-base/1.0.0/demo-base-1.0.0.pom", pom("demo-base", "").getBytes(UTF_8));
    publish(root, "com/example/demo-lib/1.0.0/demo-lib-1.0.0.jar", libJar);
    publish(root, "com/example/demo-lib/1.0.0/demo-lib-1.0.0.pom",
        pom("demo-lib", dependency("demo-base", "1.0.0")).getBytes(UTF_8));
    publish(root, "com/example/demo-lib/maven-metadata.xml", """
        <?xml version="1.0" encoding="UTF-8"?>
        <metadata><groupId>com.example</groupId><artifactId>demo-lib</artifactId>
          <versioning><latest>1.0.0</latest><release>1.0.0</release>
            <versions><version>1.0.0</version></versions><lastUpdated>20261202100000</lastUpdated></versioning>
        </metadata>
        """.getBytes(UTF_8));
    // demo-bad: its .sha1 names other bytes than its jar holds (a tampered upstream).
    publish(root, "com/example/demo-bad/1.0.0/demo-bad-1.0.0.pom", pom("demo-bad", "").getBytes(UTF_8));
    publish(root, "com/example/demo-bad/1.0.0/demo-bad-1.0.0.jar", jar("demo/bad.txt", "good"));
    Files.write(root.resolve("com/example/demo-bad/1.0.0/demo-bad-1.0.0.jar"), jar("demo/bad.txt", "evil"));

    FixtureRegistry fixture = new FixtureRegistry(root).type(".pom", "text/xml").type(".xml", "text/xml");
    return fixture.route(request -> fromLocalRepository(root, request));
  }

  /** settings.xml with the mirror, and the projects {@code consumer} and {@code bad-consumer}, under {@code dir}. */
  static void clients(Path dir, String mirror) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("settings.xml"), """
        <settings>
          <mirrors><mirror><id>corral</id><mirrorOf>*</mirrorOf><url>%s</url></mirror></mirrors>
        </settings>
        """.formatted(mirror));
    consumer(dir, "consumer", dependency("demo-lib", "[1.0,2.0)"));
    consumer(dir, "bad-consumer", dependency("demo-bad", "1.0.0"));
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

  @Test
  @Order(1)
  void threeClientsAtOnceFetchEveryFileOnce() throws Exception {
    List<CompletableFuture<ClientRun>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Path local = dir.resolve("local-" + i);
      runs.add(CompletableFuture.supplyAsync(() -> mvn("consumer", local)));
    }
    for (CompletableFuture<ClientRun> run : runs) {
      ClientRun r = run.join();
      assertEquals(0, r.exitCode(), r.describe() + node.output());
      assertTrue(r.output().contains("BUILD SUCCESS"), r.describe());
    }
    assertEquals(Map.of(), fixture.repeated(), "every upstream path requested once");
    assertEquals(1, fixture.count(LIB + "/1.0.0/demo-lib-1.0.0.jar"));
    assertEquals(1, fixture.count(LIB + "/1.0.0/demo-lib-1.0.0.jar.sha1"));
    assertEquals(1, fixture.count("/com/example/demo-base/1.0.0/demo-base-1.0.0.jar"));
    assertEquals(1, fixture.count(LIB + "/maven-metadata.xml"));
    assertEquals(0, fixture.count(LIB + "/maven-metadata.xml.sha1"),
        "the metadata checksum is computed by Corral from the metadata it serves");
    assertTrue(Files.isRegularFile(dir.resolve("local-0/com/example/demo-base/1.0.0/demo-base-1.0.0.jar")));
  }

  @Test
  @Order(2)
  void aJarThatDoesNotMatchItsSha1FailsTheClientAndIsNeverCached() throws Exception {
    String jarPath = "/com/example/demo-bad/1.0.0/demo-bad-1.0.0.jar";
    ClientRun first = mvn("bad-consumer", dir.resolve("local-bad-0"));
    assertNotEquals(0, first.exitCode(), first.describe());
    assertTrue(first.output().contains("demo-bad") && first.output().contains("502"), first.describe());
    assertFalse(Files.exists(dir.resolve("local-bad-0" + jarPath)), "the client got no bytes");
    int fetched = fixture.count(jarPath);
    assertTrue(fetched >= 1);

    String log = node.stdout() + node.stderr();
    String expected = hex(Files.readString(fixture.root().resolve(jarPath.substring(1) + ".sha1")).trim());
    String actual = sha1(Files.readAllBytes(fixture.root().resolve(jarPath.substring(1))));
    assertTrue(log.lines().anyMatch(l -> l.contains("WARN") && l.contains("demo-bad-1.0.0.jar")
        && l.contains(expected) && l.contains(actual)), "a warning with the key and both digests\n" + log);

    ClientRun second = mvn("bad-consumer", dir.resolve("local-bad-1"));
    assertNotEquals(0, second.exitCode(), second.describe());
    assertTrue(fixture.count(jarPath) > fetched, "the bad bytes were not cached: asked upstream again");
  }

  @Test
  @Order(3)
  void withTheUpstreamStoppedAWarmCacheServesAFreshClient() throws Exception {
    fixture.close();
    ClientRun replay = mvn("consumer", dir.resolve("local-replay"));
    assertEquals(0, replay.exitCode(), replay.describe() + node.output());
    assertTrue(replay.output().contains("BUILD SUCCESS"), replay.describe());
  }

  // ---- the client ---------------------------------------------------------------------------------

  private ClientRun mvn(String project, Path localRepo) {
    return mvn(dir, project, localRepo);
  }

  /** {@code mvn -C compile} of {@code dir/project} with {@code dir/settings.xml} and a fresh local repository. */
  static ClientRun mvn(Path dir, String project, Path localRepo) {
    try {
      return ClientRun.run(dir.resolve(project), MAVEN_ENV, CLIENT_TIMEOUT, List.of("mvn", "-B", "-ntp", "-C",
          "-Dstyle.color=never", "-s", dir.resolve("settings.xml").toString(),
          "-Dmaven.repo.local=" + localRepo, "compile"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static void consumer(Path dir, String name, String dependencies) throws IOException {
    Path project = Files.createDirectories(dir.resolve(name));
    Files.writeString(project.resolve("pom.xml"), """
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>demo</groupId><artifactId>%s</artifactId><version>1</version>
          <properties>
            <maven.compiler.release>17</maven.compiler.release>
            <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
          </properties>
          <dependencies>%s</dependencies>
          <build><plugins>
            <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
            <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.16.0</version></plugin>
          </plugins></build>
        </project>
        """.formatted(name, dependencies));
    // No sources: the compiler plugin still has Maven resolve (download and check) the compile
    // classpath before it finds nothing to compile, and the run stays short.
  }

  // ---- the fixture ----------------------------------------------------------------------------------

  /** Maven's plugins, from this build's local repository, with checksums computed on the fly. */
  private static Optional<FixtureRegistry.Answer> fromLocalRepository(Path root, FixtureRegistry.Request request) {
    String rel = request.path().substring(1);
    if (rel.contains("..") || Files.isRegularFile(root.resolve(rel))) {
      return Optional.empty();
    }
    try {
      for (String alg : List.of("sha1", "md5")) {
        if (rel.endsWith("." + alg)) {
          Path file = LOCAL_M2.resolve(rel.substring(0, rel.length() - alg.length() - 1));
          if (Files.isRegularFile(file)) {
            return Optional.of(FixtureRegistry.Answer.of(200, "text/plain",
                digest(alg.equals("sha1") ? "SHA-1" : "MD5", Files.readAllBytes(file)).getBytes(UTF_8)));
          }
          return Optional.empty();
        }
      }
      Path file = LOCAL_M2.resolve(rel);
      if (!rel.endsWith("maven-metadata.xml") && Files.isRegularFile(file)) {
        return Optional.of(FixtureRegistry.Answer.of(200, "application/octet-stream", Files.readAllBytes(file)));
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    return Optional.empty();
  }

  static void publish(Path root, String path, byte[] bytes) throws IOException {
    Path file = root.resolve(path);
    Files.createDirectories(file.getParent());
    Files.write(file, bytes);
    Files.writeString(root.resolve(path + ".sha1"), sha1(bytes));
    Files.writeString(root.resolve(path + ".md5"), digest("MD5", bytes));
  }

  static String pom(String artifactId, String dependencies) {
    return """
        <project xmlns="http://maven.apache.org/POM/4.0.0">
          <modelVersion>4.0.0</modelVersion>
          <groupId>com.example</groupId><artifactId>%s</artifactId><version>1.0.0</version>
          <dependencies>%s</dependencies>
        </project>
        """.formatted(artifactId, dependencies);
  }

  static String dependency(String artifactId, String version) {
    return "<dependency><groupId>com.example</groupId><artifactId>" + artifactId + "</artifactId><version>"
        + version + "</version></dependency>";
  }

  static byte[] jar(String entry, String content) throws IOException {
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JarOutputStream jar = new JarOutputStream(out, manifest)) {
      ZipEntry e = new ZipEntry(entry);
      e.setTime(0);
      jar.putNextEntry(e);
      jar.write(content.getBytes(UTF_8));
      jar.closeEntry();
    }
    return out.toByteArray();
  }

  private static String sha1(byte[] bytes) {
    return digest("SHA-1", bytes);
  }

  private static String hex(String s) {
    return s.split("\\s+")[0].toLowerCase(java.util.Locale.ROOT);
  }

  private static String digest(String algorithm, byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
