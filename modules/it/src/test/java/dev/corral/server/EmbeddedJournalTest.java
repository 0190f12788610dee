package dev.corral.server;

import static dev.corral.testkit.TestNode.xCache;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The embedded journal (H2) keeps a key's record in its table row: pekko-persistence-jdbc's
 * payload column is a BLOB, which H2 puts in its large-object store above 256 bytes, and replacing
 * one there leaves a removal that H2's cleaner thread takes up, or refuses with an exception, at
 * every commit after it (docs/benchmarks.md, "The embedded journal's records in their rows").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EmbeddedJournalTest {
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed();

  private static long records(Statement s) {
    try (ResultSet r = s.executeQuery("SELECT COUNT(*) FROM durable_state")) {
      return r.next() ? r.getLong(1) : 0;
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aKeysRecordFitsInItsRow() throws Exception {
    node.paths.put("/journal/a.bin", (exchange, n) -> TestNode.ok(exchange, TestNode.bytes(2000, 3)));
    assertEquals("MISS", xCache(node.get("/up/journal/a.bin")));
    String url = node.server().system().settings().config().getString("jdbc-durable-state-store.slick.db.url");
    try (Connection c = DriverManager.getConnection(url, "sa", ""); Statement s = c.createStatement()) {
      long inRow;
      try (ResultSet r = s.executeQuery("SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS"
          + " WHERE SETTING_NAME = 'MAX_LENGTH_INPLACE_LOB'")) {
        assertTrue(r.next(), "MAX_LENGTH_INPLACE_LOB is set (H2 lists no setting left at its default)");
        inRow = Long.parseLong(r.getString(1));
      }
      assertEquals(JournalDatabase.H2_RECORD_IN_ROW, inRow);
      TestNode.await("the miss's record is written", Duration.ofSeconds(10), () -> records(s) >= 1);
      try (ResultSet r = s.executeQuery("SELECT MAX(OCTET_LENGTH(state_payload)) FROM durable_state")) {
        assertTrue(r.next());
        long longest = r.getLong(1);
        assertTrue(longest > 256 && longest <= inRow, "a record of " + longest + " bytes: above H2's default of"
            + " 256, within the row's " + inRow);
      }
    }
  }
}
