package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class AllowedHostTest {

  @Test
  void aPortlessEntryMatchesTheSchemesDefaultPortOnly() {
    AllowedHost files = AllowedHost.parse("Files.Upstream.Example");
    assertEquals("files.upstream.example", files.host());
    assertTrue(files.matches("https", "files.upstream.example", 443));
    assertTrue(files.matches("http", "files.upstream.example", 80));
    assertFalse(files.matches("https", "files.upstream.example", 8443));
    assertFalse(files.matches("http", "files.upstream.example", 443));
    assertFalse(files.matches("https", "cdn.files.upstream.example", 443));
  }

  @Test
  void anEntryWithAPortMatchesThatPortOnly() {
    AllowedHost h = AllowedHost.parse("127.0.0.1:8443");
    assertEquals(OptionalInt.of(8443), h.port());
    assertTrue(h.matches("https", "127.0.0.1", 8443));
    assertTrue(h.matches("http", "127.0.0.1", 8443));
    assertFalse(h.matches("https", "127.0.0.1", 443));
  }

  @Test
  void ipLiteralsCompareAsAddressesAndOtherSpellingsOfAnAddressAsNames() {
    AllowedHost v4 = AllowedHost.parse("127.0.0.1:9000");
    assertTrue(v4.matches("http", IpLiteral.canonical("[::ffff:127.0.0.1]"), 9000));
    assertFalse(v4.matches("http", IpLiteral.canonical("2130706433"), 9000));
    assertFalse(v4.matches("http", IpLiteral.canonical("127.1"), 9000));
    AllowedHost v6 = AllowedHost.parse("[2001:DB8:0::1]:8443");
    assertTrue(v6.matches("https", IpLiteral.canonical("[2001:db8::1]"), 8443));
    assertTrue(v6.address().isPresent());
    assertTrue(AllowedHost.parse("files.upstream.example").address().isEmpty());
  }

  @Test
  void rejectsWhatIsNotHostOrHostPort() {
    for (String bad : new String[] {"", "  ", "https://files.upstream.example", "files.upstream.example/path",
        "user@files.upstream.example", "files.upstream.example:0", "files.upstream.example:65536",
        "files.upstream.example:x", "2001:db8::1", "[files.upstream.example]", "[2001:db8::1", "*.upstream.example",
        "files_upstream.example", "-files.example"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> AllowedHost.parse(bad), bad);
      assertFalse(e.getMessage().contains("\n"), e.getMessage());
    }
  }
}
