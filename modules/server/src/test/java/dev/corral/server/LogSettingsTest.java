package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** --log-format, --access-log and --access-log-format from each source (docs/operations.md, "Logs"). */
class LogSettingsTest {
  @TempDir Path dir;

  @Test
  void byDefaultTextAndAccessLinesInTheApplicationLog() {
    CorralSettings s = CorralSettings.load(new String[0], Map.of());
    assertEquals(new LogSettings(LogSettings.Format.TEXT, Optional.empty(), LogSettings.Format.TEXT), s.logs());
    assertEquals(LogSettings.plain(), s.logs());
  }

  @Test
  void fromTheCommandLine() {
    Path file = dir.resolve("access.log");
    CorralSettings s = CorralSettings.load(new String[] {"--log-format", "json", "--access-log", file.toString(),
        "--access-log-format", "JSON"}, Map.of());
    assertEquals(new LogSettings(LogSettings.Format.JSON, Optional.of(file), LogSettings.Format.JSON), s.logs());
  }

  @Test
  void fromTheEnvironmentWithDashForStandardOutput() {
    CorralSettings s = CorralSettings.load(new String[0],
        Map.of("CORRAL_LOG_FORMAT", "json", "CORRAL_ACCESS_LOG", "-", "CORRAL_ACCESS_LOG_FORMAT", "text"));
    assertEquals(new LogSettings(LogSettings.Format.JSON, Optional.of(LogSettings.STDOUT), LogSettings.Format.TEXT),
        s.logs());
  }

  @Test
  void fromHocon() throws Exception {
    Path conf = dir.resolve("corral.conf");
    Files.writeString(conf, "corral { log-format = json, access-log = \"" + dir.resolve("a.log")
        + "\", access-log-format = json }\n");
    CorralSettings s = CorralSettings.load(new String[] {"--config", conf.toString()}, Map.of());
    assertEquals(new LogSettings(LogSettings.Format.JSON, Optional.of(dir.resolve("a.log")), LogSettings.Format.JSON),
        s.logs());
  }

  @Test
  void anotherFormatIsRefusedByItsName() {
    SettingsException flag = assertThrows(SettingsException.class,
        () -> CorralSettings.load(new String[] {"--log-format", "xml"}, Map.of()));
    assertEquals("--log-format: \"xml\" is not text or json", flag.getMessage());
    SettingsException env = assertThrows(SettingsException.class,
        () -> CorralSettings.load(new String[0], Map.of("CORRAL_ACCESS_LOG_FORMAT", "combined")));
    assertEquals("CORRAL_ACCESS_LOG_FORMAT: \"combined\" is not text or json", env.getMessage());
  }

  @Test
  void anAccessLogFormatWithoutAnAccessLogIsAWarning() {
    CorralSettings s = CorralSettings.load(new String[] {"--access-log-format", "json"}, Map.of());
    assertTrue(s.warnings().stream().anyMatch(w -> w.startsWith("--access-log-format has no effect without --access-log")),
        s.warnings().toString());
  }
}
