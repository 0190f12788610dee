package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --tokens-file} and {@code --anonymous-repos} as settings: read and checked at start-up,
 * a bad line named by its number in one line that never shows the line, and rejected settings
 * that hold secrets never echoing them.
 */
class ClientAuthSettingsTest {
  static final String HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  static final String[] REPOS = {"--repo", "npm=npm:http://127.0.0.1:1/", "--repo", "mvn=maven:http://127.0.0.1:1/"};

  @TempDir Path dir;

  private String[] args(String... more) {
    List<String> all = new java.util.ArrayList<>(List.of(REPOS));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  private Path tokens(String text) throws Exception {
    Path f = dir.resolve("tokens");
    Files.writeString(f, text);
    return f;
  }

  @Test
  void aGoodFileAndAnonymousRepositories() throws Exception {
    Path f = tokens("# ci\nci " + HASH + "\nbuild " + HASH.replace('9', '8') + " npm,mvn\n");
    CorralSettings s = CorralSettings.load(args("--tokens-file", f.toString(), "--anonymous-repos", "npm"), Map.of());
    assertTrue(s.clientAuth().required());
    assertFalse(s.toString().contains(HASH), s.toString());
    assertTrue(s.toString().contains("anonymous [npm]"), s.toString());

    CorralSettings env = CorralSettings.load(REPOS, Map.of("CORRAL_TOKENS_FILE", f.toString(),
        "CORRAL_ANONYMOUS_REPOS", "npm, mvn"));
    assertTrue(env.clientAuth().required());

    Path conf = dir.resolve("c.conf");
    Files.writeString(conf, "corral { tokens-file = \"" + f + "\", anonymous-repos = [mvn] }");
    assertTrue(CorralSettings.load(args("--config", conf.toString()), Map.of()).clientAuth().required());

    assertFalse(CorralSettings.load(REPOS, Map.of()).clientAuth().required(), "open without a tokens file");
  }

  @Test
  void aBadLineStopsTheStartNamingItsNumberNeverItsContent() throws Exception {
    Path f = tokens("# ci\nci " + HASH + "\nbuild " + HASH.substring(0, 40) + "\n");
    SettingsException e = assertThrows(SettingsException.class,
        () -> CorralSettings.load(args("--tokens-file", f.toString()), Map.of()));
    assertEquals("--tokens-file", e.setting());
    assertTrue(e.getMessage().startsWith("--tokens-file: " + f + " line 3: "), e.getMessage());
    assertFalse(e.getMessage().contains(HASH.substring(0, 12)), e.getMessage());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());

    Path unknownRepo = tokens("ci " + HASH + " npm,pypi\n");
    SettingsException repo = assertThrows(SettingsException.class,
        () -> CorralSettings.load(args("--tokens-file", unknownRepo.toString()), Map.of()));
    assertTrue(repo.getMessage().endsWith("line 1: no repository called pypi is configured"), repo.getMessage());

    SettingsException missing = assertThrows(SettingsException.class,
        () -> CorralSettings.load(args("--tokens-file", dir.resolve("nope").toString()), Map.of()));
    assertTrue(missing.getMessage().endsWith("no such file"), missing.getMessage());
  }

  @Test
  void anonymousRepositoriesMustBeConfigured() throws Exception {
    Path f = tokens("ci " + HASH + "\n");
    SettingsException e = assertThrows(SettingsException.class,
        () -> CorralSettings.load(args("--tokens-file", f.toString(), "--anonymous-repos", "npm,pypi"), Map.of()));
    assertEquals("--anonymous-repos: no repository called \"pypi\" is configured", e.getMessage());
    CorralSettings noTokens = CorralSettings.load(args("--anonymous-repos", "npm"), Map.of());
    assertFalse(noTokens.clientAuth().required());
    assertTrue(noTokens.warnings().stream().anyMatch(w -> w.contains("has no effect without --tokens-file")),
        noTokens.warnings().toString());
  }

  @Test
  void aRejectedJournalUrlNeverShowsItsPasswordOrUserInformation() {
    for (String url : List.of("jdbc:postgres://db.example/corral?user=corral&password=s3cr3t-pw",
        "postgresql://corral:s3cr3t-pw@db.example/corral")) {
      SettingsException e = assertThrows(SettingsException.class,
          () -> CorralSettings.load(new String[] {"--journal", url}, Map.of()));
      assertEquals("--journal", e.setting());
      assertFalse(e.getMessage().contains("s3cr3t-pw"), e.getMessage());
      assertTrue(e.getMessage().contains("is not jdbc:postgresql://HOST:PORT/DB"), e.getMessage());
    }
  }
}
