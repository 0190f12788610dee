package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.sun.net.httpserver.HttpExchange;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.File;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The serve command as a user types it, through the real {@code ./corral} launcher from the
 * repository root: {@code ./corral serve --http-port 0 --data-dir DIR --repo NAME=TYPE:URL}. The
 * jar is fresh (built before this module), so the launcher must start it without rebuilding.
 */
class ServeCommandIT {
  private static final byte[] BODY = "hello from the upstream\n".getBytes(StandardCharsets.UTF_8);

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;
  private FakeUpstream upstream;

  @AfterEach
  void stopUpstream() {
    if (upstream != null) {
      upstream.close();
    }
  }

  @Test
  void theLauncherStartsTheFreshJarAndServes() throws Exception {
    Path root = CorralProcess.repoRoot();
    assertTrue(Files.isExecutable(root.resolve("corral")), "no executable ./corral in " + root);
    failIfTheLauncherWouldRebuild(root);
    upstream = new FakeUpstream(ServeCommandIT::answer);

    String path = CorralProcess.javaExecutable().getParent() + File.pathSeparator + System.getenv("PATH");
    CorralProcess node = processes.track(CorralProcess.startCommand("serve-command", root,
        Map.of("PATH", path, "JAVA_OPTS", ""),
        List.of("./corral", "serve", "--http-port", "0", "--cluster-port", "0", "--peer-port", "0", "--data-dir", temp.resolve("data").toString(),
            "--repo", "files=generic:" + upstream.url("/"))));
    // The first start of a fresh jar makes its class data sharing archive first (a training run of
    // a node): 50 s of the 60 allowed until 2026-12-07, beside a cluster test in CI.
    String base = node.awaitListening(Duration.ofSeconds(150));
    assertTrue(base.startsWith("http://127.0.0.1:"), "binds the loopback by default: " + base);
    assertFalse(node.stderr().contains("building the server jar"), "no rebuild of a fresh jar\n" + node.output());
    Path archive = Path.of(CorralProcess.serverJar().toString().replaceFirst("\\.jar$", ".jsa"));
    assertTrue(Files.isRegularFile(archive) && !Files.getLastModifiedTime(archive).toInstant()
            .isBefore(Files.getLastModifiedTime(CorralProcess.serverJar()).toInstant()),
        "the launcher keeps a class data sharing archive of the jar beside it (issue 14, start-up)\n" + node.output());

    HttpResponse<byte[]> first = Http.getBytes(base + "/files/docs/hello.txt");
    assertEquals(200, first.statusCode());
    assertEquals("MISS", Http.xCache(first));
    assertArrayEquals(BODY, first.body());
    HttpResponse<byte[]> second = Http.getBytes(base + "/files/docs/hello.txt");
    assertEquals("HIT", Http.xCache(second));
    assertArrayEquals(BODY, second.body());
    assertEquals(1, upstream.requests());
    assertEquals("/docs/hello.txt", upstream.last().path());
  }

  private static void answer(HttpExchange exchange, int nth) throws IOException {
    if (exchange.getRequestURI().getPath().equals("/docs/hello.txt")) {
      FakeUpstream.send(exchange, 200, BODY);
    } else {
      FakeUpstream.send(exchange, 404, new byte[0]);
    }
  }

  /**
   * The launcher rebuilds when a source (*.java, *.conf, *.xml outside target/ and src/test/) is newer than the
   * jar; that nested Maven build has no place in a test run, so say so instead of running it.
   */
  private static void failIfTheLauncherWouldRebuild(Path root) throws IOException {
    Path jar = CorralProcess.serverJar();
    FileTime built = Files.getLastModifiedTime(jar);
    Optional<Path> newer;
    try (Stream<Path> files = Stream.of("modules/core", "modules/http", "modules/server")
        .map(root::resolve)
        .flatMap(ServeCommandIT::walk)) {
      newer = Stream.concat(Stream.of(root.resolve("pom.xml")), files)
          .filter(f -> f.toString().endsWith(".java") || f.toString().endsWith(".conf") || f.toString().endsWith(".xml"))
          .filter(f -> modified(f).compareTo(built) > 0)
          .findFirst();
    }
    if (newer.isPresent()) {
      fail("the server jar " + jar + " is older than " + newer.get()
          + "; ./corral would rebuild it. Build it first: mvn -o -B -q -DskipTests -pl modules/server -am package");
    }
  }

  private static Stream<Path> walk(Path dir) {
    try {
      return Files.walk(dir)
          .filter(p -> !p.toString().contains(File.separator + "target" + File.separator))
          .filter(p -> !p.toString().contains(File.separator + "src" + File.separator + "test" + File.separator))
          .filter(Files::isRegularFile).toList().stream();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static FileTime modified(Path f) {
    try {
      return Files.getLastModifiedTime(f);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
