package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A connection is ended the way its protocol last set, and one whose way is set after the stop
 * began (accepted, or its TLS handshake done, as the node closes its connections) is ended at once.
 */
class ConnectionEndTest {
  private final List<String> ran = new ArrayList<>();

  @Test
  void endsTheWayLastSet() {
    ConnectionEnd end = new ConnectionEnd(() -> ran.add("cut"));
    end.endBy(() -> ran.add("graceful"));
    assertEquals(List.of(), ran, "nothing runs before the end");
    end.end();
    assertEquals(List.of("graceful"), ran);
  }

  @Test
  void aWaySetAfterTheEndBeganRunsAtOnce() {
    ConnectionEnd end = new ConnectionEnd(() -> ran.add("none yet"));
    end.end();
    end.endBy(() -> ran.add("cut"));
    end.endBy(() -> ran.add("graceful"));
    assertEquals(List.of("none yet", "cut", "graceful"), ran);
  }
}
