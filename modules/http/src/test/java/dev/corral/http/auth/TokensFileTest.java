package dev.corral.http.auth;

import static dev.corral.http.auth.ClientAuthTest.bearer;
import static dev.corral.http.auth.ClientAuthTest.sha;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reload race: a file's modified time has a granularity (a coarse kernel clock tick, a
 * second on some file systems), so a change written within the tick of the last read keeps the
 * same modified time, and replacing one 64-hex hash with another keeps the size. Such a change
 * (revoking a token by replacing its line) must still be seen. The tick is simulated by setting
 * the modified time back to the one read before.
 *
 * <p>A read's "now" is the test's clock, not the machine's: whether a file counts as too recent to
 * trust ({@link TokensFile#RACY_MILLIS}) never depends on how long the test took.
 */
class TokensFileTest {
  private static final Instant NOW = Instant.parse("2030-01-01T12:00:00Z");

  @TempDir Path dir;

  /** A wall clock the test sets. */
  private static final class TestClock extends Clock {
    private volatile Instant now;

    TestClock(Instant now) {
      this.now = now;
    }

    void set(Instant now) {
      this.now = now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return now;
    }
  }

  private ClientAuth auth(Path file, Clock clock) throws Exception {
    return new ClientAuth(Optional.of(TokensFile.open(file, Set.of("npm"), clock)), Set.of());
  }

  /** Sets the file's modified time, and checks the file system kept it to the millisecond. */
  private static void modified(Path file, FileTime time) throws Exception {
    Files.setLastModifiedTime(file, time);
    assertEquals(time.toMillis(), Files.getLastModifiedTime(file).toMillis(), "the file system keeps milliseconds");
  }

  @Test
  void aTokenReplacedWithinTheSameTimestampTickAndSizeIsRevoked() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    FileTime tick = Files.getLastModifiedTime(file);
    // Read within the tick of the write, however long the test has taken so far.
    ClientAuth auth = auth(file, Clock.fixed(tick.toInstant(), ZoneOffset.UTC));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")));

    Files.writeString(file, "ci " + sha("t-new") + "\n");
    Files.setLastModifiedTime(file, tick);

    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", bearer("t-old")), "the revoked token");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-new")));
  }

  @Test
  void aFileCompletedWithinTheTickOfABrokenReadIsReadAgain() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    TestClock clock = new TestClock(Files.getLastModifiedTime(file).toInstant());
    ClientAuth auth = auth(file, clock);
    // Half written: the second line's hash is cut short (same length as the finished file).
    String good = "ci " + sha("t-old") + "\nnew " + sha("t-new") + "\n";
    String half = good.substring(0, good.length() - 10) + "         \n";
    Files.writeString(file, half);
    FileTime tick = Files.getLastModifiedTime(file);
    clock.set(tick.toInstant()); // the broken read happens within the tick of its write
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")),
        "the broken change keeps what was in force");

    Files.writeString(file, good);
    Files.setLastModifiedTime(file, tick);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("new")), auth.check("npm", bearer("t-new")));
  }

  @Test
  void aFileModifiedJustUnderRacyMillisBeforeTheReadIsReadAgainOnTheSameStat() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    FileTime tick = FileTime.from(NOW.minusMillis(TokensFile.RACY_MILLIS - 1));
    modified(file, tick);
    ClientAuth auth = auth(file, Clock.fixed(NOW, ZoneOffset.UTC));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")));

    Files.writeString(file, "ci " + sha("t-new") + "\n"); // same size
    modified(file, tick); // same modified time

    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", bearer("t-old")),
        "modified " + (TokensFile.RACY_MILLIS - 1) + " ms before the read: not trusted, read again");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-new")));
  }

  @Test
  void aFileModifiedRacyMillisBeforeTheReadIsTrustedOnItsStatAlone() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    FileTime tick = FileTime.from(NOW.minusMillis(TokensFile.RACY_MILLIS));
    modified(file, tick);
    TestClock clock = new TestClock(NOW);
    ClientAuth auth = auth(file, clock);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")));

    // The same size and modified time: old enough to be trusted, so the file is not read again
    // (the limit of a stat, accepted for files older than RACY_MILLIS), even much later.
    Files.writeString(file, "ci " + sha("t-new") + "\n");
    modified(file, tick);
    clock.set(NOW.plusSeconds(3600));

    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")),
        "modified " + TokensFile.RACY_MILLIS + " ms before the read: trusted on its modified time and size");
    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", bearer("t-new")));

    // A change the stat does show is read at once.
    modified(file, FileTime.from(NOW.plusSeconds(1)));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-new")));
  }
}
