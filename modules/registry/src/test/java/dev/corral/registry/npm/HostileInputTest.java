package dev.corral.registry.npm;

import static dev.corral.registry.HostileInput.mutate;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import dev.corral.registry.HostileInput;
import java.nio.charset.StandardCharsets;
import java.util.Optional;
import java.util.Random;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Whatever an upstream or a client sends, the npm parsers and rewrites answer (possibly "nothing
 * found" or the body unchanged) and never throw: mutated packuments and Accept headers, from a
 * fixed seed.
 */
class HostileInputTest {

  @Test
  void mutatedDocumentsNeverMakeTheParsersOrRewritesThrow() {
    String sample = NpmRepositoryTest.packument("@demo/scoped",
        "http://127.0.0.1:9/r/@demo/scoped/-/scoped-1.0.0.tgz", "sha512-" + "A".repeat(86) + "==", "a".repeat(40));
    Random r = new Random(42);
    for (int i = 0; i < 3000; i++) {
      String doc = mutate(sample, r);
      ByteString body = ByteString.fromString(doc, StandardCharsets.UTF_8);
      assertDoesNotThrow(() -> {
        NpmPackument.tarballs(body, "@demo/scoped");
        NpmPackument.rewrite(body, "@demo/scoped", "http://127.0.0.1:8080/npm");
      }, doc);
    }
  }

  @Test
  void garbledAcceptHeadersAndNamesNeverThrow() {
    for (HostileInput.Garbled g : HostileInput.acceptHeadersAndNames()) {
      String accept = g.accept();
      String name = g.name();
      assertDoesNotThrow(() -> {
        NpmRepository.variant(Optional.of(accept));
        NpmRepository.isPackageName(name);
        NpmPackument.fileName("@demo/scoped", name, name);
      }, accept + " / " + name);
    }
  }
}
