package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The attack: a {@code --journal} URL carrying the database password ({@code password=} in its
 * query, or {@code user:password@} before the host) that cannot be reached. The start-up error,
 * printed to the console and kept by whatever collects it, must name the setting and the URL
 * without the password, wherever in the URL it sits; likewise the schema check's error and
 * {@code corral db init}'s line.
 */
class JournalSecretsTest {
  private static final String SECRET = "s3cretPW";

  @TempDir Path dir;
  private int closedPort;

  /** A loopback port nothing listens on: bound once, then closed. */
  @BeforeEach
  void closedPort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
  }

  private CorralSettings settings(String journalUrl, String... more) {
    List<String> args = new ArrayList<>(List.of("--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0",
        "--peer-port", "0", "--data-dir", dir.resolve("data").toString(), "--repo", "up=generic:http://127.0.0.1:1/",
        "--journal", journalUrl));
    args.addAll(List.of(more));
    return CorralSettings.load(args.toArray(String[]::new), Map.of());
  }

  /** The start's error for an unreachable database at {@code journalUrl}. */
  private String startError(String journalUrl, String... more) {
    CorralSettings settings = settings(journalUrl, more);
    SettingsException e = assertThrows(SettingsException.class, () -> CorralServer.start(settings).close());
    assertEquals("--journal", e.setting());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    return e.getMessage();
  }

  private String base() {
    return "jdbc:postgresql://127.0.0.1:" + closedPort + "/db";
  }

  @Test
  void aPasswordInTheQueryIsNotShownWhenTheDatabaseCannotBeReached() {
    String message = startError(base() + "?user=corral&password=" + SECRET);
    assertTrue(message.startsWith("--journal: cannot connect to " + base() + "?***: "), message);
    assertFalse(message.contains(SECRET), message);
  }

  @Test
  void aPasswordInTheMiddleOfTheQueryIsNotShown() {
    String message = startError(base() + "?ssl=false&password=" + SECRET + "&user=corral");
    assertTrue(message.startsWith("--journal: cannot connect to " + base() + "?***: "), message);
    assertFalse(message.contains(SECRET), message);
  }

  @Test
  void aPasswordBeforeTheHostIsNotShown() {
    // Accepted by the settings (HOST may carry user information), but not by the driver, which
    // took "corral:s3cretPW@127.0.0.1" for a host name.
    String url = "jdbc:postgresql://corral:" + SECRET + "@127.0.0.1:" + closedPort + "/db";
    String message = startError(url);
    assertEquals("--journal: jdbc:postgresql://***@127.0.0.1:" + closedPort + "/db: the PostgreSQL driver takes no"
        + " user or password before the host; give them with --journal-user and --journal-password"
        + " (or --journal-password-file)", message);
  }

  @Test
  void thePasswordSettingIsNotShownEither() {
    String message = startError(base() + "?user=corral", "--journal-password", SECRET);
    assertFalse(message.contains(SECRET), message);
  }

  @Test
  void theSchemaCheckDoesNotShowThePassword() {
    JournalDatabase db = new JournalDatabase(settings(base() + "?password=" + SECRET + "&user=corral").journal(),
        dir.resolve("data"));
    SettingsException e = assertThrows(SettingsException.class, db::checkSchema);
    assertTrue(e.getMessage().startsWith("--journal: the database at " + base() + "?*** does not have"),
        e.getMessage());
    assertFalse(e.getMessage().contains(SECRET), e.getMessage());
  }

  @Test
  void dbInitNamesTheDatabaseWithoutThePassword() {
    assertEquals("corral: tables ready in " + base() + "?***",
        Main.tablesReady(base() + "?user=corral&password=" + SECRET));
    assertEquals("corral: tables ready in jdbc:h2:file:/d/db/corral;DB_CLOSE_ON_EXIT=FALSE",
        Main.tablesReady("jdbc:h2:file:/d/db/corral;DB_CLOSE_ON_EXIT=FALSE"));
  }

  @Test
  void theSettingsAsTextDoNotShowThePassword() {
    CorralSettings settings = settings(base() + "?user=corral&password=" + SECRET, "--journal-password", "other" + SECRET);
    String text = settings.journal().orElseThrow().toString();
    assertTrue(text.startsWith("JournalSettings[url=" + base() + "?***, "), text);
    assertFalse(text.contains(SECRET), text);
  }

  @Test
  void aUrlTheDriverRefusesIsNotRepeatedWithItsPassword() {
    // The settings take any port number; the driver then finds no driver for the URL and says so
    // with the URL whole.
    String url = "jdbc:postgresql://127.0.0.1:99999/db?password=" + SECRET;
    String message = startError(url);
    assertTrue(message.startsWith("--journal: cannot connect to jdbc:postgresql://127.0.0.1:99999/db?***: "), message);
    assertFalse(message.contains(SECRET), message);
  }
}
