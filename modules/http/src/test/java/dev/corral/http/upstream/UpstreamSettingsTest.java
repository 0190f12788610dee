package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class UpstreamSettingsTest {

  @Test
  void defaultsAreTheDocumentedOnes() {
    UpstreamSettings d = UpstreamSettings.DEFAULTS;
    assertEquals(Duration.ofSeconds(5), d.connectTimeout());
    assertEquals(Duration.ofSeconds(30), d.firstByteTimeout());
    assertEquals(Duration.ofSeconds(30), d.idleTimeout());
    assertEquals(1, d.retries());
    assertEquals(Duration.ofSeconds(1), d.retryBackoff());
    assertEquals(5, d.maxRedirects());
    assertEquals(64, d.maxConnections());
    assertEquals(256, d.maxOpenRequests());
    assertEquals(Optional.empty(), d.credential());
  }

  @Test
  void poolQueueIsAPowerOfTwoAtLeastFourTimesTheConnections() {
    assertEquals(4, UpstreamSettings.openRequestsFor(1));
    assertEquals(256, UpstreamSettings.openRequestsFor(64));
    assertEquals(512, UpstreamSettings.openRequestsFor(100));
    assertEquals(512, UpstreamSettings.DEFAULTS.withMaxConnections(100).maxOpenRequests());
    assertThrows(IllegalArgumentException.class,
        () -> new UpstreamSettings(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1), 0,
            Duration.ZERO, 0, 64, 100, Optional.empty()));
    assertThrows(IllegalArgumentException.class,
        () -> new UpstreamSettings(Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1), 0,
            Duration.ZERO, 0, 64, 32, Optional.empty()));
  }

  @Test
  void secretsNeverAppearInToString() {
    Credential basic = new Credential.Basic("alice", "hunter2");
    Credential bearer = new Credential.Bearer("tok-123");
    assertFalse(basic.toString().contains("hunter2"));
    assertTrue(basic.toString().contains("alice"));
    assertFalse(bearer.toString().contains("tok-123"));
    String settings = UpstreamSettings.DEFAULTS.withCredential(basic).toString();
    assertFalse(settings.contains("hunter2"));
    assertEquals("Bearer tok-123", bearer.authorization());
  }

  @Test
  void missingSecretsFailNamingTheSetting(@TempDir Path dir) {
    IllegalArgumentException env =
        assertThrows(IllegalArgumentException.class, () -> Credential.secretFromEnv("CORRAL_NO_SUCH_VAR", Map.<String, String>of()::get));
    assertTrue(env.getMessage().contains("CORRAL_NO_SUCH_VAR"), env.getMessage());

    Path missing = dir.resolve("nope.txt");
    IllegalArgumentException file = assertThrows(IllegalArgumentException.class, () -> Credential.secretFromFile(missing));
    assertTrue(file.getMessage().contains(missing.toString()), file.getMessage());
  }

  @Test
  void secretFileLosesItsTrailingNewline(@TempDir Path dir) throws Exception {
    Path token = Files.writeString(dir.resolve("token"), "abc\n");
    assertEquals("abc", Credential.secretFromFile(token));
  }

  @Test
  void readsSettingsAndCredentialFromConfig(@TempDir Path dir) throws Exception {
    Path password = Files.writeString(dir.resolve("pw"), "from-file\n");
    var config = ConfigFactory.parseString(
        "connect-timeout = 2s\n first-byte-timeout = 10s\n retries = 3\n max-connections = 16\n"
            + "credential { type = basic, user = bob, password-file = \"" + password + "\" }");

    UpstreamSettings s = UpstreamSettings.fromConfig(config, UpstreamSettings.DEFAULTS);

    assertEquals(Duration.ofSeconds(2), s.connectTimeout());
    assertEquals(Duration.ofSeconds(10), s.firstByteTimeout());
    assertEquals(Duration.ofSeconds(30), s.idleTimeout());
    assertEquals(3, s.retries());
    assertEquals(16, s.maxConnections());
    assertEquals(64, s.maxOpenRequests());
    assertEquals(Optional.of(new Credential.Basic("bob", "from-file")), s.credential());

    var bearer = ConfigFactory.parseString("credential { type = bearer, token-env = UPSTREAM_TOKEN }");
    assertEquals(Optional.of(new Credential.Bearer("t0k")),
        UpstreamSettings.fromConfig(bearer, UpstreamSettings.DEFAULTS, Map.of("UPSTREAM_TOKEN", "t0k")::get).credential());

    var noSource = ConfigFactory.parseString("credential { type = bearer }");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> UpstreamSettings.fromConfig(noSource, UpstreamSettings.DEFAULTS));
    assertTrue(e.getMessage().contains("credential.token-env"), e.getMessage());
  }
}
