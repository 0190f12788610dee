package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class HotBlobsTest {

  @Test
  void keepsVerifiedSmallBlobsBySha256AndHandsOutTheSameBytes() {
    HotBlobs hot = new HotBlobs(1024 * 1024);
    ByteString bytes = ByteString.fromString("verified");
    hot.put("abc", bytes);
    assertSame(bytes, hot.get("abc").orElseThrow());
    assertEquals(Optional.empty(), hot.get("other"));
  }

  @Test
  void neverKeepsBlobsOverOneMebibyte() {
    HotBlobs hot = new HotBlobs(64L * 1024 * 1024);
    assertTrue(hot.fits(HotBlobs.MAX_ENTRY));
    assertFalse(hot.fits(HotBlobs.MAX_ENTRY + 1L));
    hot.put("big", ByteString.fromArray(new byte[HotBlobs.MAX_ENTRY + 1]));
    assertEquals(Optional.empty(), hot.get("big"));
  }

  @Test
  void sizeZeroKeepsNothing() {
    HotBlobs off = new HotBlobs(0);
    assertFalse(off.fits(1));
    off.put("a", ByteString.fromString("x"));
    assertEquals(Optional.empty(), off.get("a"));
  }
}
