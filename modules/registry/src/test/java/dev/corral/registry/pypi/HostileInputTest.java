package dev.corral.registry.pypi;

import static dev.corral.registry.HostileInput.mutate;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import dev.corral.registry.HostileInput;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * Whatever an upstream or a client sends, the PyPI parsers and rewrites answer (possibly "nothing
 * found" or the body unchanged) and never throw: mutated pages and Accept headers, from a fixed
 * seed.
 */
class HostileInputTest {

  @Test
  void mutatedDocumentsNeverMakeTheParsersOrRewritesThrow() {
    List<String> samples = List.of(PypiRepositoryTest.HTML, PypiRepositoryTest.JSON);
    Random r = new Random(42);
    for (int i = 0; i < 3000; i++) {
      String doc = mutate(samples.get(i % samples.size()), r);
      ByteString body = ByteString.fromString(doc, StandardCharsets.UTF_8);
      assertDoesNotThrow(() -> {
        SimpleIndex.files(body, "http://127.0.0.1:9/simple/p/");
        SimpleIndex.rewrite(body, "http://127.0.0.1:8080/py/-/files/p");
      }, doc);
    }
  }

  @Test
  void garbledAcceptHeadersAndNamesNeverThrow() {
    for (HostileInput.Garbled g : HostileInput.acceptHeadersAndNames()) {
      String accept = g.accept();
      String name = g.name();
      assertDoesNotThrow(() -> {
        PypiRepository.variant(Optional.of(accept), Optional.of("format=" + accept));
        PypiRepository.normalize(name);
      }, accept + " / " + name);
    }
  }
}
