package dev.corral.http.auth;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The tokens file's lines: what is accepted, and bad lines named by number, never shown. */
class TokenLinesTest {
  static final String HASH = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"; // sha256("test")
  static final Set<String> REPOS = Set.of("npm", "maven", "pypi");

  @Test
  void namesHashesAndRepositoryLists() {
    List<ClientToken> tokens = TokenLines.parse("""
        # CI machines
        ci   %s            # reads every repository
        \tbuild %s npm,maven
        
        """.formatted(HASH, HASH.toUpperCase()), REPOS);
    assertEquals(2, tokens.size());
    assertEquals("ci", tokens.get(0).name());
    assertEquals(Optional.empty(), tokens.get(0).repos());
    assertTrue(tokens.get(0).reads("pypi"));
    assertEquals(Optional.of(Set.of("npm", "maven")), tokens.get(1).repos());
    assertFalse(tokens.get(1).reads("pypi"));
    assertTrue(tokens.get(1).matches(PresentedSecret.sha256("test")));
    assertFalse(tokens.get(1).matches(PresentedSecret.sha256("Test")));
    assertFalse(tokens.get(0).toString().contains(HASH), tokens.get(0).toString());
  }

  @Test
  void aBadLineIsNamedByItsNumberAndNeverShown() {
    String secretish = "ab".repeat(31) + "zz"; // 64 characters, not hex: a typo in a hash
    List<String> bad = List.of(
        "ci " + secretish,
        "ci " + HASH.substring(1),
        HASH + " ci",
        "ci",
        "ci " + HASH + " npm extra",
        "ci " + HASH + " npm,,maven",
        "ci " + HASH + " npm,docker",
        "bad/name " + HASH);
    for (String line : bad) {
      String text = "# header\n\nok " + HASH + "\n" + line + "\n";
      TokenLines.Malformed e = assertThrows(TokenLines.Malformed.class, () -> TokenLines.parse(text, REPOS), line);
      assertTrue(e.getMessage().startsWith("line 4: "), e.getMessage());
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
      assertFalse(e.getMessage().contains(HASH.substring(0, 16)), e.getMessage());
      assertFalse(e.getMessage().contains(secretish.substring(0, 16)), e.getMessage());
    }
    TokenLines.Malformed twice = assertThrows(TokenLines.Malformed.class,
        () -> TokenLines.parse("ci " + HASH + "\nci " + HASH + "\n", REPOS));
    assertEquals("line 2: the same name as on line 1", twice.getMessage());
  }
}
