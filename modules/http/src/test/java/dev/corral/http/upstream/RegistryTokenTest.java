package dev.corral.http.upstream;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class RegistryTokenTest {
  private static final long SENT = 5_000_000_000L;

  private static RegistryToken parse(String json) {
    return RegistryToken.parse(json.getBytes(UTF_8), SENT);
  }

  @Test
  void livesItsExpiresInFromTheRequestLessAMargin() {
    RegistryToken t = parse("{\"token\":\"abc.def\",\"expires_in\":300,\"issued_at\":\"2001-01-01T00:00:00Z\"}");
    assertEquals("Bearer abc.def", t.authorization());
    assertEquals(SENT + Duration.ofSeconds(290).toNanos(), t.expiresAtNanos());
    assertEquals(SENT + Duration.ofSeconds(54).toNanos(), parse("{\"token\":\"t\"}").expiresAtNanos());
    assertEquals(SENT + Duration.ofSeconds(54).toNanos(), parse("{\"token\":\"t\",\"expires_in\":0}").expiresAtNanos());
    assertEquals(SENT + Duration.ofSeconds(18).toNanos(), parse("{\"token\":\"t\",\"expires_in\":20}").expiresAtNanos());
  }

  @Test
  void takesTokenElseAccessToken() {
    assertEquals("Bearer one", parse("{\"token\":\"one\",\"access_token\":\"two\"}").authorization());
    assertEquals("Bearer two", parse("{\"access_token\":\"two\"}").authorization());
  }

  @Test
  void refusesAnswersWithoutAUsableTokenWithoutQuotingThem() {
    for (String bad : List.of("{\"token\":\"sec", "{\"token\":secret}", "[\"secret\"]", "{\"token\":42,\"x\":\"secret\"}", "{}",
        "{\"token\":\"sec ret\"}", "{\"token\":\"secret\\r\\nX: y\"}", "{\"token\":\"\"}", "null")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> parse(bad), bad);
      assertFalse(e.getMessage().contains("sec"), e.getMessage());
      assertEquals(null, e.getCause());
    }
    assertFalse(parse("{\"token\":\"secret\"}").toString().contains("secret"));
  }

  @Test
  void aPathOfTheDistributionApiNamesItsPullScope() {
    assertEquals(Optional.of(List.of("repository:library/alpine:pull")),
        RegistryTokens.pullScopes("/v2/library/alpine/manifests/3.20"));
    assertEquals(Optional.of(List.of("repository:a/blobs/b:pull")),
        RegistryTokens.pullScopes("/v2/a/blobs/b/blobs/sha256:00"));
    assertEquals(Optional.of(List.of("repository:x/manifests/y:pull")),
        RegistryTokens.pullScopes("/prefix/v2/x/manifests/y/tags/list"));
    assertEquals(Optional.of(List.of()), RegistryTokens.pullScopes("/v2/"));
    assertEquals(Optional.empty(), RegistryTokens.pullScopes("/v2/manifests/x"));
    assertEquals(Optional.empty(), RegistryTokens.pullScopes("/v2/library/alpine"));
    assertEquals(Optional.empty(), RegistryTokens.pullScopes("/simple/pkg/"));
  }
}
