package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class AcceptEncodingTest {
  private static boolean gzip(String... lines) {
    return AcceptEncoding.gzip(List.of(lines));
  }

  @Test
  void gzipNamedOrCoveredByStarIsTaken() {
    assertTrue(gzip("gzip"));
    assertTrue(gzip("gzip, deflate, br"));
    assertTrue(gzip("deflate,GZIP;q=0.5"));
    assertTrue(gzip("x-gzip"));
    assertTrue(gzip("*"));
    assertTrue(gzip("br", "gzip"), "every header line counts");
    assertTrue(gzip("gzip ; q = 0.001"));
  }

  @Test
  void noHeaderEmptyOrOtherCodingsOnlyMeanIdentity() {
    assertFalse(gzip());
    assertFalse(gzip(""));
    assertFalse(gzip("deflate, br"));
    assertFalse(gzip("identity"));
  }

  @Test
  void aZeroWeightRefuses() {
    assertFalse(gzip("gzip;q=0"));
    assertFalse(gzip("gzip;q=0.000"));
    assertFalse(gzip("*;q=0"));
    assertFalse(gzip("gzip;q=0, *"), "gzip named: the star does not bring it back");
    assertTrue(gzip("*;q=0, gzip"));
    assertFalse(gzip("gzip;q=nonsense"), "an unparseable weight is no weight");
    assertFalse(gzip("gzip;q=2"));
  }

  @Test
  void identityNamedWithMoreWeightWins() {
    assertFalse(gzip("gzip;q=0.5, identity"));
    assertTrue(gzip("gzip;q=0.5, identity;q=0.5"));
    assertTrue(gzip("gzip, identity;q=0"), "identity refused and gzip taken: gzip");
    assertFalse(gzip("identity;q=0"), "both refused: answered identity all the same");
  }
}
