package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import java.util.List;
import org.junit.jupiter.api.Test;

class KeyPrefixTest {
  private static StoredArtifact stored(ArtifactKey key) {
    return new StoredArtifact(key.id(), key.canonical(), "0".repeat(64), 1, List.of(), 0);
  }

  @Test
  void matchesTheRepositorysKeysUnderTheUrlPrefixWhateverTheirVariantOrDigest() {
    KeyPrefix prefix = new KeyPrefix("npm", "http://127.0.0.1:9/registry/left");
    assertTrue(prefix.matches(stored(ArtifactKey.of("npm", "http://127.0.0.1:9/registry/left-pad"))));
    assertTrue(prefix.matches(stored(new ArtifactKey("npm", "http://127.0.0.1:9/registry/left/-/left-1.tgz",
        "application/json", new Digest("sha256", "a".repeat(64))))));
    assertFalse(prefix.matches(stored(ArtifactKey.of("npm", "http://127.0.0.1:9/registry/right"))));
    // Another repository, even one whose name starts with this one's, or with the same upstream.
    assertFalse(prefix.matches(stored(ArtifactKey.of("npm2", "http://127.0.0.1:9/registry/left-pad"))));
    assertFalse(prefix.matches(stored(ArtifactKey.of("np", "http://127.0.0.1:9/registry/left-pad"))));
    assertTrue(new KeyPrefix("npm", "").matches(stored(ArtifactKey.of("npm", "http://127.0.0.1:9/x"))));
  }

  @Test
  void aPrefixWithALineBreakOrNoRepositoryIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> new KeyPrefix("npm", "http://127.0.0.1:9/\nx"));
    assertThrows(IllegalArgumentException.class, () -> new KeyPrefix("", "http://127.0.0.1:9/"));
    assertThrows(IllegalArgumentException.class, () -> new KeyPrefix("a\nb", ""));
  }

  @Test
  void theEmptyPrefixIsTheWholeRepository() {
    KeyPrefix all = new KeyPrefix("go", "");
    assertEquals("", all.urlPrefix());
    // Every key of the repository, whatever its upstream, URL, variant or digest ...
    assertTrue(all.matches(stored(ArtifactKey.of("go", "http://127.0.0.1:9/x"))));
    assertTrue(all.matches(stored(ArtifactKey.of("go", "https://upstream.example/example.org/x/mod/@v/list"))));
    assertTrue(all.matches(stored(new ArtifactKey("go", "http://127.0.0.1:7/m/@v/v1.0.0.zip", "json",
        new Digest("sha256", "b".repeat(64))))));
    // ... and no key of another repository: not one whose name starts with it or that it starts
    // with, not one with the same upstream URL.
    assertFalse(all.matches(stored(ArtifactKey.of("golang", "http://127.0.0.1:9/x"))));
    assertFalse(all.matches(stored(ArtifactKey.of("g", "http://127.0.0.1:9/x"))));
    assertFalse(all.matches(stored(ArtifactKey.of("npm", "http://127.0.0.1:9/x"))));
  }
}
