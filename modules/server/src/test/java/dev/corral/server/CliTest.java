package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;

class CliTest {
  private static Cli.Command parse(String... args) {
    return Cli.parse(args, Map.of());
  }

  @Test
  void serveReturnsTheSettings() {
    Cli.Serve serve = assertInstanceOf(Cli.Serve.class,
        parse("serve", "--http-port", "0", "--repo", "x=generic:http://127.0.0.1:9/a"));
    assertEquals(0, serve.settings().httpPort());
    assertEquals("http://127.0.0.1:9/a", serve.settings().repo("x").orElseThrow().url());
    assertEquals(0, serve.exitCode());
  }

  @Test
  void serveReadsTheEnvironmentPassedIn() {
    Cli.Serve serve = assertInstanceOf(Cli.Serve.class,
        Cli.parse(new String[] {"serve"}, Map.of("CORRAL_HTTP_PORT", "9999")));
    assertEquals(9999, serve.settings().httpPort());
  }

  @Test
  void badInputIsExitCodeTwoWithTheMessage() {
    Cli.Invalid bad = assertInstanceOf(Cli.Invalid.class, parse("serve", "--http-port", "abc"));
    assertEquals(2, bad.exitCode());
    assertEquals("--http-port: \"abc\" is not a port (0-65535)", bad.message());

    Cli.Invalid badRepo = assertInstanceOf(Cli.Invalid.class, parse("serve", "--repo", "Bad=generic:http://127.0.0.1:9"));
    assertEquals("--repo \"Bad=generic:http://127.0.0.1:9\": name must match [a-z0-9][a-z0-9._-]*", badRepo.message());
    assertEquals(Cli.BAD_INPUT, badRepo.exitCode());
  }

  @Test
  void unknownOrMissingCommand() {
    Cli.Invalid unknown = assertInstanceOf(Cli.Invalid.class, parse("srve"));
    assertTrue(unknown.message().startsWith("unknown command \"srve\""), unknown.message());
    assertEquals(2, unknown.exitCode());
    assertEquals(2, assertInstanceOf(Cli.Invalid.class, parse()).exitCode());
  }

  @Test
  void helpInEveryForm() {
    for (String[] args : new String[][] {{"help"}, {"--help"}, {"-h"}, {"serve", "--help"}, {"serve", "--http-port", "abc", "-h"}}) {
      Cli.Help help = assertInstanceOf(Cli.Help.class, parse(args), String.join(" ", args));
      assertEquals(0, help.exitCode());
      assertEquals(Cli.helpText(), help.text());
    }
  }

  @Test
  void helpListsEveryFlagVariableAndPath() {
    String help = Cli.helpText();
    for (String flag : new String[] {"--config", "--http-host", "--http-port", "--data-dir", "--max-size", "--repo", "--admin-token-file"}) {
      assertTrue(help.contains("  " + flag + " "), flag + " missing from\n" + help);
    }
    for (Setting s : Setting.values()) {
      assertTrue(help.contains("  " + s.usage() + "\n"), s.flag());
      assertTrue(help.contains("env " + s.env()), s.env());
      s.path().ifPresent(p -> assertTrue(help.contains("HOCON " + p), p));
    }
    for (RepoSetting r : RepoSetting.values()) {
      assertTrue(help.contains("  " + r.key()), r.key());
    }
  }

  @Test
  void versionInEveryFormIsTheProjectVersionAndJava() {
    for (String[] args : new String[][] {{"version"}, {"--version"}}) {
      Cli.Version version = assertInstanceOf(Cli.Version.class, parse(args), String.join(" ", args));
      assertEquals(0, version.exitCode());
      String[] lines = version.text().split("\n");
      // the build writes the pom's version into corral-version.properties
      assertTrue(lines[0].matches("corral \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?"), version.text());
      assertTrue(lines[1].startsWith("Java " + System.getProperty("java.version") + " "), version.text());
    }
  }

  @Test
  void helpNamesTheEnvironmentOnlyVariables() {
    String help = Cli.helpText();
    assertTrue(help.contains("  CORRAL_LOG_LEVEL\n") && help.replaceAll("\\s+", " ").contains("(default INFO)"), help);
    for (String variable : SettingSources.ENVIRONMENT_ONLY) { // and those are no warning
      assertTrue(help.contains(variable), variable);
    }
    assertTrue(help.contains("corral version"), help);
  }

  @Test
  void helpDefaultsComeFromTheDefaultsFile() {
    String help = Cli.helpText();
    assertTrue(help.contains("HOCON corral.http.port, default 8080"), help);
    assertTrue(help.contains("HOCON corral.max-size, default 10GiB"), help);
    assertTrue(help.contains("connect-timeout (default 5s)"), help);
    assertTrue(help.contains("waiter-budget (default 2 x first-byte-timeout + 3s)"), help);
  }

  @Test
  void dbInitTakesTheServeOptions() {
    Cli.DbInit init = assertInstanceOf(Cli.DbInit.class,
        parse("db", "init", "--journal", "jdbc:postgresql://127.0.0.1:5432/corral", "--journal-user", "u"));
    assertEquals("jdbc:postgresql://127.0.0.1:5432/corral", init.settings().journal().orElseThrow().url());
    assertEquals(0, init.exitCode());
    Cli.Invalid bad = assertInstanceOf(Cli.Invalid.class, parse("db", "init", "--journal", "jdbc:mysql://x/y"));
    assertEquals("--journal: \"jdbc:mysql://x/y\" is not jdbc:postgresql://HOST:PORT/DB", bad.message());
    assertEquals(2, assertInstanceOf(Cli.Invalid.class, parse("db")).exitCode());
    assertEquals(2, assertInstanceOf(Cli.Invalid.class, parse("db", "drop")).exitCode());
    assertTrue(Cli.helpText().contains("corral db init"));
  }

  @Test
  void tableMatchesTheLoader() {
    // Every defaultable repo key has a built-in default or a computed one, and the table's
    // environment variables are exactly the ones the loader reads.
    for (RepoSetting r : RepoSetting.values()) {
      assertEquals(r.inRepoDefaults(), r.defaultText().isPresent(), r.key());
    }
    String markdown = Setting.markdownTable();
    for (Setting s : Setting.values()) {
      assertTrue(markdown.contains("`" + s.env() + "`"), s.env());
    }
  }

  @Test
  void readmeShowsTheCurrentSettingsTable() throws Exception {
    // The README's table is pasted from Setting.markdownTable(); a setting added without
    // refreshing it fails here. Regenerate with -Dcorral.readme.update=true.
    java.nio.file.Path readme = java.nio.file.Path.of("../../README.md");
    String text = java.nio.file.Files.readString(readme);
    if (Boolean.getBoolean("corral.readme.update")) { // mvn ... -Dcorral.readme.update=true
      int start = text.indexOf("| Flag | HOCON");
      int repoTable = text.indexOf("| Key | Default", start);
      int end = text.indexOf("\n\n", repoTable);
      text = text.substring(0, start) + Setting.markdownTable().strip() + text.substring(end);
      java.nio.file.Files.writeString(readme, text);
    }
    assertTrue(text.contains(Setting.markdownTable().strip()),
        "README.md's settings table differs from Setting.markdownTable()");
  }
}
