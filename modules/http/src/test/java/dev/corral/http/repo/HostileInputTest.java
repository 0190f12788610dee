package dev.corral.http.repo;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import dev.corral.registry.PathSegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Whatever an upstream or a client sends, the parsers and rewrites answer (possibly "nothing
 * found" or the body unchanged) and never throw: mutated packuments, pages and Accept headers,
 * from a fixed seed.
 */
class HostileInputTest {
  private static final String ALPHABET = "<>\"'=&;#%/\\{}[]:,. \n\tahref0123456789xX+-_@!?\u00e9\u2603";

  static String mutate(String s, Random r) {
    StringBuilder b = new StringBuilder(s);
    int edits = 1 + r.nextInt(8);
    for (int i = 0; i < edits && b.length() > 0; i++) {
      int at = r.nextInt(b.length());
      switch (r.nextInt(3)) {
        case 0 -> b.deleteCharAt(at);
        case 1 -> b.insert(at, ALPHABET.charAt(r.nextInt(ALPHABET.length())));
        default -> b.setLength(at); // truncated
      }
    }
    return b.toString();
  }

  @Test
  void mutatedDocumentsNeverMakeTheParsersOrRewritesThrow() {
    List<String> samples = List.of(PypiRepositoryTest.HTML, PypiRepositoryTest.JSON,
        NpmRepositoryTest.packument("@demo/scoped", "http://127.0.0.1:9/r/@demo/scoped/-/scoped-1.0.0.tgz",
            "sha512-" + "A".repeat(86) + "==", "a".repeat(40)));
    Random r = new Random(42);
    for (int i = 0; i < 3000; i++) {
      String doc = mutate(samples.get(i % samples.size()), r);
      ByteString body = ByteString.fromString(doc, StandardCharsets.UTF_8);
      assertDoesNotThrow(() -> {
        SimpleIndex.files(body, "http://127.0.0.1:9/simple/p/");
        SimpleIndex.rewrite(body, "http://127.0.0.1:8080/py/-/files/p");
        NpmPackument.tarballs(body, "@demo/scoped");
        NpmPackument.rewrite(body, "@demo/scoped", "http://127.0.0.1:8080/npm");
      }, doc);
    }
  }

  @Test
  void garbledAcceptHeadersAndNamesNeverThrow() {
    Random r = new Random(7);
    for (int i = 0; i < 3000; i++) {
      String accept = mutate("application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*", r);
      String name = mutate("@demo/scoped%2F-1.0.0.tgz", r);
      assertDoesNotThrow(() -> {
        NpmRepository.variant(Optional.of(accept));
        PypiRepository.variant(Optional.of(accept), Optional.of("format=" + accept));
        PathSegment.decode(name);
        PathSegment.lastOf(name);
        NpmRepository.isPackageName(name);
        PypiRepository.normalize(name);
        NpmPackument.fileName("@demo/scoped", name, name);
      }, accept + " / " + name);
    }
  }
}
