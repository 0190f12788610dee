package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import org.junit.jupiter.api.Test;

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
    assertEquals(1024, d.maxOpenRequests());
    assertEquals(Optional.empty(), d.credential());
  }

  @Test
  void poolQueueIsAPowerOfTwoOfAtLeast1024AndFourTimesTheConnections() {
    assertEquals(1024, UpstreamSettings.openRequestsFor(1));
    assertEquals(1024, UpstreamSettings.openRequestsFor(64));
    assertEquals(1024, UpstreamSettings.openRequestsFor(256));
    assertEquals(2048, UpstreamSettings.openRequestsFor(300));
    assertEquals(1024, UpstreamSettings.DEFAULTS.withMaxConnections(100).maxOpenRequests());
    assertEquals(4096, UpstreamSettings.DEFAULTS.withMaxConnections(1000).maxOpenRequests());
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
}
