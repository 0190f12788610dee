package dev.corral.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class AcceptHeaderTest {
  static double q(String accept, String type) {
    return AcceptHeader.quality(Optional.ofNullable(accept), type);
  }

  @Test
  void theMostSpecificMatchingRangeDecides() {
    assertEquals(1.0, q(null, "text/html"));
    assertEquals(1.0, q("", "text/html"));
    assertEquals(0.0, q("application/json", "text/html"));
    assertEquals(0.5, q("text/*;q=0.5, */*;q=0.1", "text/html"));
    assertEquals(0.0, q("text/html;q=0, */*", "text/html"), "an explicit q=0 refuses even with */*");
    assertEquals(0.01, q("application/vnd.pypi.simple.v1+json, text/html; q=0.01", "text/html"));
    assertEquals(1.0, q("TEXT/HTML", "text/html"));
  }

  @Test
  void malformedEntriesAreSkipped() {
    assertEquals(0.3, q("text/html;q=abc, text/*;q=0.3", "text/html"));
    assertEquals(0.0, q("text/html;q=2", "text/html"));
    assertEquals(0.0, q(";;,,", "text/html"));
  }
}
