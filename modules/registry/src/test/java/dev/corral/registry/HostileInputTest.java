package dev.corral.registry;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;

import org.junit.jupiter.api.Test;

/**
 * Whatever a client or an upstream sends, the shared path helpers answer (possibly "malformed")
 * and never throw: garbled names, from a fixed seed. The adapters' own parsers and rewrites are
 * tried in their packages' {@code HostileInputTest}.
 */
class HostileInputTest {

  @Test
  void garbledNamesNeverThrow() {
    for (HostileInput.Garbled g : HostileInput.acceptHeadersAndNames()) {
      String name = g.name();
      assertDoesNotThrow(() -> {
        PathSegment.decode(name);
        PathSegment.lastOf(name);
      }, g.accept() + " / " + name);
    }
  }
}
