package dev.corral.http.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Who reads what: Bearer and Basic (any user name, the token as password), tokens limited to
 * repositories, anonymous repositories, and the file re-read on the first check after it changes
 * (driven by the file's modified time and size, so no waiting).
 */
class ClientAuthTest {
  @TempDir Path dir;

  static String sha(String token) {
    return HexFormat.of().formatHex(PresentedSecret.sha256(token));
  }

  static Optional<String> bearer(String token) {
    return Optional.of("Bearer " + token);
  }

  static Optional<String> basic(String user, String password) {
    return Optional.of("Basic " + Base64.getEncoder().encodeToString((user + ":" + password).getBytes(StandardCharsets.UTF_8)));
  }

  private ClientAuth auth(String text, String... anonymous) throws Exception {
    Path file = dir.resolve("tokens");
    Files.writeString(file, text);
    return new ClientAuth(Optional.of(TokensFile.open(file, Set.of("npm", "maven", "open"))), Set.of(anonymous));
  }

  @Test
  void bearerAndBasicWithAnyUserName() throws Exception {
    ClientAuth auth = auth("ci " + sha("tok-ci") + "\n");
    for (Optional<String> header : java.util.List.of(bearer("tok-ci"), Optional.of("bearer   tok-ci "),
        basic("anyone", "tok-ci"), basic("", "tok-ci"), basic("__token__", "tok-ci"))) {
      assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("npm", header), header.get());
    }
  }

  @Test
  void missingWrongOrMisplacedTokensAreUnauthorized() throws Exception {
    ClientAuth auth = auth("ci " + sha("tok-ci") + "\n");
    for (Optional<String> header : java.util.List.of(Optional.<String>empty(), bearer("tok-cj"), bearer("tok-ci2"),
        bearer(""), basic("tok-ci", ""), basic("tok-ci", "x"), Optional.of("Basic !!notbase64"),
        Optional.of("Token tok-ci"), Optional.of("tok-ci"), Optional.of("Bearer " + sha("tok-ci")))) {
      assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", header), header.toString());
    }
  }

  @Test
  void aTokenLimitedToRepositoriesIsForbiddenElsewhere() throws Exception {
    ClientAuth auth = auth("npm-only " + sha("t1") + " npm\nall " + sha("t2") + "\n");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("npm-only")), auth.check("npm", bearer("t1")));
    assertEquals(new ClientAuth.Verdict.Forbidden("npm-only"), auth.check("maven", bearer("t1")));
    assertEquals(new ClientAuth.Verdict.Forbidden("npm-only"), auth.check("no-such-repo", bearer("t1")));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("all")), auth.check("maven", bearer("t2")));
  }

  @Test
  void anonymousRepositoriesNeedNoTokenAndAnOpenNodeNone() throws Exception {
    ClientAuth auth = auth("ci " + sha("t") + " npm\n", "open");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.empty()), auth.check("open", Optional.empty()));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.empty()), auth.check("open", bearer("wrong")));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("ci")), auth.check("open", bearer("t")));
    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", Optional.empty()));
    assertFalse(auth.toString().contains(sha("t")));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.empty()), ClientAuth.open().check("npm", Optional.empty()));
    assertFalse(ClientAuth.open().required());
    assertTrue(auth.required());
  }

  @Test
  void aChangedFileIsInForceForTheNextCheck() throws Exception {
    ClientAuth auth = auth("old " + sha("t-old") + "\n");
    Path file = dir.resolve("tokens");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("old")), auth.check("npm", bearer("t-old")));

    // Same size, and the modified time moved on explicitly: no reliance on the clock's granularity.
    FileTime before = Files.getLastModifiedTime(file);
    Files.writeString(file, "new " + sha("t-new") + "\n");
    Files.setLastModifiedTime(file, FileTime.fromMillis(before.toMillis() + 2_000));
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("new")), auth.check("npm", bearer("t-new")));
    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("npm", bearer("t-old")));

    // A broken change keeps what was in force; the next good change is read again.
    Files.writeString(file, "new " + sha("t-new") + "\nbroken line here\n");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("new")), auth.check("npm", bearer("t-new")));
    Files.writeString(file, "new " + sha("t-new") + "\nthird " + sha("t3") + " maven\n");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("third")), auth.check("maven", bearer("t3")));

    // A deleted file keeps what was in force too, until it is back.
    Files.delete(file);
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("third")), auth.check("maven", bearer("t3")));
    Files.writeString(file, "back " + sha("t4") + "\n");
    assertEquals(new ClientAuth.Verdict.Allowed(Optional.of("back")), auth.check("maven", bearer("t4")));
    assertInstanceOf(ClientAuth.Verdict.Unauthorized.class, auth.check("maven", bearer("t3")));
  }
}
