package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The real process's start-up contract: bad settings end the process with exit code 2 and one
 * stderr line {@code corral: <setting>: <problem>} before anything is started (no data dir is
 * created); {@code --help} exits 0 and lists the flags; a good start prints the listening line
 * and reports ready.
 */
class StartupIT {
  private static final Duration EXIT = Duration.ofSeconds(30);

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  @ParameterizedTest(name = "{0} {1}")
  @CsvSource(delimiter = '|', value = {
      "--http-port | abc                             | --http-port",
      "--max-size  | 10XB                            | --max-size",
      "--repo      | Bad=generic:http://127.0.0.1:1 | --repo",
      "--drain-timeout | 30                          | --drain-timeout",
  })
  void aBadFlagExitsWithTwoAndNamesTheSetting(String flag, String value, String named) throws Exception {
    Path dataDir = temp.resolve("data");
    CorralProcess p = processes.track(CorralProcess.start("bad-flag", List.of(),
        "serve", "--http-port", "0", "--data-dir", dataDir.toString(), flag, value));
    assertBadSetting(p, named);
    assertTrue(Files.notExists(dataDir), "a refused start creates no data dir");
  }

  @Test
  void aBadPerRepositorySettingInTheConfigFileExitsWithTwoAndNamesItsKey() throws Exception {
    Path conf = temp.resolve("corral.conf");
    Files.writeString(conf, "corral.repos.up { type = generic, url = \"http://127.0.0.1:1/\", first-byte-timeout = 5 }\n");
    CorralProcess p = processes.track(CorralProcess.start("bad-conf", List.of(),
        "serve", "--http-port", "0", "--data-dir", temp.resolve("data").toString(), "--config", conf.toString()));
    assertBadSetting(p, "corral.repos.up.first-byte-timeout");
  }

  private static void assertBadSetting(CorralProcess p, String setting) {
    assertEquals(2, p.awaitExit(EXIT), "exit code\n" + p.output());
    List<String> lines = p.stderr().lines().toList();
    assertEquals(1, lines.size(), "one stderr line\n" + p.output());
    String line = lines.get(0);
    // "corral: SETTING: problem"; a --repo error quotes the offending value after the flag
    assertTrue(line.startsWith("corral: " + setting + ": ") || line.startsWith("corral: " + setting + " \""),
        "stderr names the setting " + setting + ": " + line);
    String problem = line.substring(line.indexOf(": ", ("corral: " + setting).length()) + 2);
    assertTrue(!problem.isBlank(), "and says what is wrong: " + line);
    assertEquals("", p.stdout(), "nothing on stdout");
  }

  @Test
  void aClusterPortInUseExitsWithTwoAndNamesTheSetting() throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      CorralProcess p = processes.track(CorralProcess.start("port-taken", List.of(), "serve", "--http-port", "0",
          "--cluster-port", String.valueOf(taken.getLocalPort()), "--data-dir", temp.resolve("data").toString(),
          "--repo", "up=generic:http://127.0.0.1:1/"));
      assertEquals(2, p.awaitExit(EXIT), p.output());
      List<String> ours = p.stderr().lines().filter(l -> l.startsWith("corral:")).toList();
      assertEquals(1, ours.size(), p.output());
      assertTrue(ours.get(0).startsWith("corral: --cluster-port: cannot listen on 127.0.0.1:" + taken.getLocalPort()),
          ours.get(0));
    }
  }

  @Test
  void aPeerPortInUseExitsWithTwoAndNamesTheSetting() throws Exception {
    try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      CorralProcess p = processes.track(CorralProcess.start("peer-port-taken", List.of(), "serve", "--http-port", "0",
          "--cluster-port", "0", "--peer-port", String.valueOf(taken.getLocalPort()),
          "--data-dir", temp.resolve("data").toString(), "--repo", "up=generic:http://127.0.0.1:1/"));
      assertEquals(2, p.awaitExit(EXIT), p.output());
      List<String> ours = p.stderr().lines().filter(l -> l.startsWith("corral:")).toList();
      assertEquals(1, ours.size(), p.output());
      assertTrue(ours.get(0).startsWith("corral: --peer-port: cannot listen on 127.0.0.1:" + taken.getLocalPort()),
          ours.get(0));
    }
  }

  @Test
  void helpExitsZeroAndListsTheFlags() throws Exception {
    CorralProcess p = processes.track(CorralProcess.start("help", List.of(), "--help"));
    assertEquals(0, p.awaitExit(EXIT), p.output());
    String help = p.stdout();
    for (String flag : List.of("--config", "--http-host", "--http-port", "--data-dir", "--max-size", "--repo",
        "--drain-timeout", "--tombstone-ttl", "--admin-token-file", "--public-base-url", "--cluster-port",
        "--seed-nodes", "--node-name", "--journal", "--journal-password-file", "--management-port", "db init")) {
      assertTrue(help.contains(flag), "help lists " + flag + "\n" + help);
    }
    assertEquals("", p.stderr(), "nothing on stderr");
  }

  @Test
  void aGoodStartListensOnTheLoopbackAndIsReady() throws Exception {
    CorralProcess p = processes.serve("start", List.of(), temp.resolve("data"), List.of(),
        "up=generic:http://127.0.0.1:1/");
    String base = p.awaitListening(Duration.ofSeconds(60));
    assertTrue(base.startsWith("http://127.0.0.1:"), base);
    assertTrue(p.stdout().contains("listening on http://127.0.0.1:"), p.output());
    HttpResponse<byte[]> ready = Http.getBytes(base + "/-/health/ready");
    assertEquals(200, ready.statusCode(), new String(ready.body(), StandardCharsets.UTF_8));
    assertEquals(200, Http.getBytes(base + "/-/health/live").statusCode());
    assertTrue(Files.isDirectory(temp.resolve("data")), "the data dir is created");
  }
}
