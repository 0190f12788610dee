package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shared database on a real PostgreSQL: {@code corral db init} creates the tables and may run
 * again; a node starts on them; a database that cannot be reached, refuses the password or lacks
 * the key records' columns stops the start with one line naming {@code --journal}.
 */
class JournalIT {
  private static final Duration EXIT = Duration.ofSeconds(60);

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  private List<String> journal(Postgres.Database db, String password) throws Exception {
    Path file = Files.createTempFile(temp, "pw", "");
    Files.writeString(file, password + "\n");
    return List.of("--journal", db.url(), "--journal-user", db.user(), "--journal-password-file", file.toString());
  }

  private CorralProcess dbInit(List<String> journal) throws Exception {
    List<String> args = new java.util.ArrayList<>(List.of("db", "init"));
    args.addAll(journal);
    return processes.track(CorralProcess.start("db-init", List.of(), args.toArray(String[]::new)));
  }

  @Test
  void dbInitCreatesTheTablesRunsAgainAndANodeStartsOnThem() throws Exception {
    Postgres.Database db = postgres.newDatabase();
    List<String> journal = journal(db, db.password());
    for (int run = 1; run <= 2; run++) {
      CorralProcess init = dbInit(journal);
      assertEquals(0, init.awaitExit(EXIT), "db init, run " + run + "\n" + init.output());
      assertTrue(init.stdout().contains("corral: tables ready in " + db.url()), init.output());
    }
    CorralProcess node = processes.serve("on-postgres", List.of(), temp.resolve("data"), journal,
        "up=generic:http://127.0.0.1:1/");
    String base = node.awaitListening(Duration.ofSeconds(60));
    assertEquals(200, Http.getBytes(base + "/-/health/ready").statusCode(), node.output());
    assertTrue(Files.notExists(temp.resolve("data/db")), "no embedded database beside PostgreSQL");
  }

  @Test
  void anUnreachableDatabaseStopsTheStartNamingTheSetting() throws Exception {
    Postgres.Database nowhere = new Postgres.Database(
        "jdbc:postgresql://127.0.0.1:" + Postgres.freePort() + "/corral", "corral", "pw");
    assertJournalError(startNode(journal(nowhere, "pw")), "cannot connect to " + nowhere.url());
    assertJournalError(dbInit(journal(nowhere, "pw")), "cannot connect to " + nowhere.url());
  }

  @Test
  void aWrongPasswordStopsTheStartNamingTheSetting() throws Exception {
    Postgres.Database db = postgres.newDatabase();
    assertJournalError(startNode(journal(db, "not-" + db.password())), "password authentication failed");
  }

  @Test
  void aKeyRecordTableWithoutCorralsColumnsStopsTheStart() throws Exception {
    Postgres.Database db = postgres.newDatabase();
    postgres.sql(db, "CREATE TABLE public.durable_state (persistence_id VARCHAR(255) PRIMARY KEY)");
    assertJournalError(startNode(journal(db, db.password())), "does not have the key records' table");
  }

  private CorralProcess startNode(List<String> journal) throws Exception {
    return processes.serve("bad-journal", List.of(), temp.resolve("data"), journal, "up=generic:http://127.0.0.1:1/");
  }

  private static void assertJournalError(CorralProcess p, String problem) {
    int exit = p.awaitExit(EXIT);
    assertTrue(exit != 0, "a failed start exits non-zero\n" + p.output());
    List<String> ours = p.stderr().lines().filter(l -> l.startsWith("corral:")).toList();
    assertEquals(1, ours.size(), "one line from corral on stderr\n" + p.output());
    assertTrue(ours.get(0).startsWith("corral: --journal: "), ours.get(0));
    assertTrue(ours.get(0).contains(problem), ours.get(0));
    assertTrue(!p.stdout().contains("listening on"), "never listened\n" + p.output());
  }
}
