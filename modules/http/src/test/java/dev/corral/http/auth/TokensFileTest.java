package dev.corral.http.auth;

import static dev.corral.http.auth.ClientAuthTest.bearer;
import static dev.corral.http.auth.ClientAuthTest.sha;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
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
 */
class TokensFileTest {
  @TempDir Path dir;

  private ClientAuth auth(Path file) throws Exception {
    return new ClientAuth(Optional.of(TokensFile.open(file, Set.of("npm"))), Set.of());
  }

  @Test
  void aTokenReplacedWithinTheSameTimestampTickAndSizeIsRevoked() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    ClientAuth auth = auth(file);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")));

    FileTime tick = Files.getLastModifiedTime(file);
    Files.writeString(file, "ci " + sha("t-new") + "\n");
    Files.setLastModifiedTime(file, tick);

    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", bearer("t-old")), "the revoked token");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-new")));
  }

  @Test
  void aFileCompletedWithinTheTickOfABrokenReadIsReadAgain() throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, "ci " + sha("t-old") + "\n");
    ClientAuth auth = auth(file);
    // Half written: the second line's hash is cut short (same length as the finished file).
    String good = "ci " + sha("t-old") + "\nnew " + sha("t-new") + "\n";
    String half = good.substring(0, good.length() - 10) + "         \n";
    Files.writeString(file, half);
    FileTime tick = Files.getLastModifiedTime(file);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", bearer("t-old")),
        "the broken change keeps what was in force");

    Files.writeString(file, good);
    Files.setLastModifiedTime(file, tick);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("new")), auth.check("npm", bearer("t-new")));
  }
}
