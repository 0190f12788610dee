package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
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
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code go} command ({@code go mod download}, a fresh module cache each run, the
 * checksum database off) against a go repository of one Corral node, in front of a static
 * GOPROXY tree built here: {@code example.com/demo} v1.0.0 and v1.1.0 and
 * {@code example.com/Upper} v0.1.0 (served case-encoded as {@code example.com/!upper}), module
 * zips in Go's zip format. The {@code h1:} sums the go command computes from what it downloaded
 * are compared with the sums of the files built here.
 *
 * <p>In order: three clients at once (every fixture path fetched once); a missing module (404
 * passed through, the go command reports it); the fixture stopped and a fresh client replayed.
 * Installs {@code golang-go} with apt-get when {@code go} is missing; fails (never skips) when it
 * cannot.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class GoClientIT {
  private static final Duration CLIENT_TIMEOUT = Duration.ofMinutes(3);
  static final List<String> MODULES =
      List.of("example.com/demo@v1.0.0", "example.com/Upper@v0.1.0", "example.com/demo@latest");

  private Path dir;
  private FixtureRegistry fixture;
  private CorralProcess node;
  private String goproxy;
  /** Expected {@code h1:} sums by module@version: of the zip and of the go.mod. */
  private final Map<String, String[]> sums = new LinkedHashMap<>();

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    fixture = fixture(dir, sums);
    node = CorralProcess.serve("go-it", List.of(), dir.resolve("data"), List.of(), "go=go:" + fixture.url() + "/");
    goproxy = node.awaitListening(Duration.ofSeconds(60)) + "/go";
  }

  /**
   * Installs go when missing, and serves a GOPROXY tree under {@code dir/upstream}: example.com/demo
   * v1.0.0 and v1.1.0, example.com/Upper v0.1.0; {@code sums} gets the expected h1: sums.
   */
  static FixtureRegistry fixture(Path dir, Map<String, String[]> sums) throws Exception {
    ClientCommand.require("go", "golang-go", "GoClientIT");
    Path root = Files.createDirectories(dir.resolve("upstream"));
    module(root, "example.com/demo", "example.com/demo", List.of("v1.0.0", "v1.1.0"), sums);
    module(root, "example.com/Upper", "example.com/!upper", List.of("v0.1.0"), sums);
    return new FixtureRegistry(root).type(".info", "application/json").type("list", "text/plain");
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
  void threeClientsAtOnceFetchEveryFileOnce() {
    List<CompletableFuture<ClientRun>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Path home = dir.resolve("client-" + i);
      runs.add(CompletableFuture.supplyAsync(() -> download(home, MODULES)));
    }
    for (CompletableFuture<ClientRun> run : runs) {
      ClientRun r = run.join();
      assertEquals(0, r.exitCode(), r.describe() + node.output());
      assertSums(r);
    }
    assertEquals(Map.of(), fixture.repeated(), "every upstream path requested once");
    assertEquals(1, fixture.count("/example.com/!upper/@v/v0.1.0.zip"), "asked upstream in the GOPROXY encoding");
    assertEquals(1, fixture.count("/example.com/demo/@v/list"));
    assertEquals(1, fixture.count("/example.com/demo/@v/v1.1.0.zip"));
  }

  @Test
  @Order(2)
  void aMissingModuleIsNotFoundForTheGoCommand() {
    ClientRun r = download(dir.resolve("client-missing"), List.of("example.com/missing@v1.0.0"));
    assertNotEquals(0, r.exitCode(), r.describe());
    assertTrue(r.output().contains("404"), r.describe());
  }

  @Test
  @Order(3)
  void withTheUpstreamStoppedAWarmCacheServesAFreshClient() {
    fixture.close();
    ClientRun r = download(dir.resolve("client-replay"), MODULES);
    assertEquals(0, r.exitCode(), r.describe() + node.output());
    assertSums(r);
  }

  // ---- the client -------------------------------------------------------------------------------

  private ClientRun download(Path home, List<String> modules) {
    return download(goproxy, home, modules);
  }

  /** {@code go mod download -json modules...} with GOPROXY and a fresh module cache under {@code home}. */
  static ClientRun download(String goproxy, Path home, List<String> modules) {
    return download(goproxy, home, modules, Map.of());
  }

  /** The same with {@code extraEnv} added (e.g. {@code NETRC}). */
  static ClientRun download(String goproxy, Path home, List<String> modules, Map<String, String> extraEnv) {
    try {
      Path work = Files.createDirectories(home.resolve("work"));
      Map<String, String> env = new TreeMap<>(Map.of(
          "GOPROXY", goproxy, "GOSUMDB", "off", "GONOSUMDB", "example.com", "GOFLAGS", "-modcacherw",
          "GOMODCACHE", home.resolve("modcache").toString(), "GOCACHE", home.resolve("gocache").toString(),
          "GOPATH", home.resolve("gopath").toString(), "GOENV", "off", "GOWORK", "off", "GOTOOLCHAIN", "local"));
      env.put("GO111MODULE", "on");
      env.put("HOME", home.toString());
      env.putAll(extraEnv);
      List<String> command = new ArrayList<>(List.of("go", "mod", "download", "-json"));
      command.addAll(modules);
      return ClientRun.run(work, env, CLIENT_TIMEOUT, command);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static final Pattern ENTRY = Pattern.compile(
      "\"Path\": \"([^\"]+)\",\\s*\"Version\": \"([^\"]+)\".*?\"Sum\": \"([^\"]+)\",\\s*\"GoModSum\": \"([^\"]+)\"",
      Pattern.DOTALL);

  /** The go command's sums of what it downloaded are those of the files built here. */
  private void assertSums(ClientRun r) {
    assertSums(sums, r);
  }

  static void assertSums(Map<String, String[]> sums, ClientRun r) {
    Matcher m = ENTRY.matcher(r.output());
    int seen = 0;
    while (m.find()) {
      String[] expected = sums.get(m.group(1) + "@" + m.group(2));
      assertTrue(expected != null, "unexpected module " + m.group(1) + "@" + m.group(2) + "\n" + r.describe());
      assertEquals(expected[0], m.group(3), r.describe());
      assertEquals(expected[1], m.group(4), r.describe());
      seen++;
    }
    assertEquals(3, seen, r.describe());
  }

  // ---- the fixture: a static GOPROXY tree ---------------------------------------------------------

  static void module(Path root, String path, String encoded, List<String> versions,
      Map<String, String[]> sums) throws Exception {
    Path v = Files.createDirectories(root.resolve(encoded).resolve("@v"));
    Files.writeString(v.resolve("list"), String.join("\n", versions) + "\n");
    for (String version : versions) {
      String mod = "module " + path + "\n\ngo 1.19\n";
      Map<String, byte[]> files = new TreeMap<>();
      String prefix = path + "@" + version + "/";
      files.put(prefix + "go.mod", mod.getBytes(UTF_8));
      files.put(prefix + "LICENSE", "Test fixture, no rights reserved.\n".getBytes(UTF_8));
      String pkg = path.substring(path.lastIndexOf('/') + 1).toLowerCase(java.util.Locale.ROOT);
      files.put(prefix + pkg + ".go", ("package " + pkg + "\n\nconst Version = \"" + version + "\"\n").getBytes(UTF_8));
      Files.writeString(v.resolve(version + ".info"), "{\"Version\":\"" + version + "\",\"Time\":\"2026-01-01T00:00:00Z\"}\n");
      Files.writeString(v.resolve(version + ".mod"), mod);
      Files.write(v.resolve(version + ".zip"), zip(files));
      sums.put(path + "@" + version, new String[] {h1(files), h1(Map.of("go.mod", mod.getBytes(UTF_8)))});
    }
  }

  private static byte[] zip(Map<String, byte[]> files) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (ZipOutputStream zip = new ZipOutputStream(out)) {
      for (Map.Entry<String, byte[]> f : files.entrySet()) {
        ZipEntry e = new ZipEntry(f.getKey());
        e.setTime(0);
        zip.putNextEntry(e);
        zip.write(f.getValue());
        zip.closeEntry();
      }
    }
    return out.toByteArray();
  }

  /** Go's dirhash "h1:": base64 SHA-256 over the sorted lines {@code "<sha256 hex>  <name>\n"}. */
  private static String h1(Map<String, byte[]> files) throws Exception {
    StringBuilder summary = new StringBuilder();
    for (Map.Entry<String, byte[]> f : new TreeMap<>(files).entrySet()) {
      summary.append(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(f.getValue())))
          .append("  ").append(f.getKey()).append('\n');
    }
    byte[] digest = MessageDigest.getInstance("SHA-256").digest(summary.toString().getBytes(UTF_8));
    return "h1:" + Base64.getEncoder().encodeToString(digest);
  }
}
