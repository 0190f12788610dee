package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ByteRangeTest {

  private static final ByteRange FULL = new ByteRange.Full();
  private static final ByteRange UNSATISFIABLE = new ByteRange.Unsatisfiable();

  private static ByteRange partial(long offset, long length) {
    return new ByteRange.Partial(offset, length);
  }

  @Test
  void closedRange() {
    assertEquals(partial(0, 1), ByteRange.parse("bytes=0-0", 100));
    assertEquals(partial(10, 11), ByteRange.parse("bytes=10-20", 100));
    assertEquals(partial(99, 1), ByteRange.parse("bytes=99-99", 100));
  }

  @Test
  void lastPositionIsClampedToTheEnd() {
    assertEquals(partial(90, 10), ByteRange.parse("bytes=90-1000", 100));
    assertEquals(partial(0, 100), ByteRange.parse("bytes=0-99999999999999999999999", 100));
  }

  @Test
  void openRange() {
    assertEquals(partial(10, 90), ByteRange.parse("bytes=10-", 100));
    assertEquals(partial(0, 100), ByteRange.parse("bytes=0-", 100)); // whole body, still a 206
  }

  @Test
  void suffixRange() {
    assertEquals(partial(90, 10), ByteRange.parse("bytes=-10", 100));
    assertEquals(partial(0, 100), ByteRange.parse("bytes=-100", 100));
    assertEquals(partial(0, 100), ByteRange.parse("bytes=-500", 100));
    assertEquals(partial(0, 100), ByteRange.parse("bytes=-99999999999999999999999", 100));
  }

  @Test
  void unsatisfiable() {
    assertEquals(UNSATISFIABLE, ByteRange.parse("bytes=100-", 100));
    assertEquals(UNSATISFIABLE, ByteRange.parse("bytes=100-200", 100));
    assertEquals(UNSATISFIABLE, ByteRange.parse("bytes=99999999999999999999999-", 100));
    assertEquals(UNSATISFIABLE, ByteRange.parse("bytes=-0", 100));
  }

  @ParameterizedTest
  @ValueSource(strings = {"bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-0", "bytes=5-10"})
  void emptyRepresentationIsUnsatisfiableForAnyRange(String range) {
    assertEquals(UNSATISFIABLE, ByteRange.parse(range, 0));
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "bytes=0-1,5-6", "bytes=0-1, 5-6", "bytes=-1,0-0", // multi-range
        "items=0-1", "none", "bytesx=0-1", "=0-1", // other units
        "bytes=", "bytes=,", "bytes=-", "bytes=a-b", "bytes=1-a", "bytes=5-4", "bytes=0", "bytes=+1-2",
        "bytes=1 - 2", "bytes=0x1-2", "bytes=1-2-3", "bytes=--1", "bytes 0-1", "bytes=-1-"
      })
  void fullWhenMultiOtherUnitOrInvalid(String range) {
    assertEquals(FULL, ByteRange.parse(range, 100), range);
  }

  @Test
  void fullWhenNoHeader() {
    assertEquals(FULL, ByteRange.parse(null, 100));
  }

  @Test
  void tolerantOfCaseWhitespaceAndEmptyElements() {
    assertEquals(partial(0, 2), ByteRange.parse("Bytes=0-1", 100));
    assertEquals(partial(0, 2), ByteRange.parse("BYTES = 0-1 ", 100));
    assertEquals(partial(0, 2), ByteRange.parse("bytes=0-1,", 100));
    assertEquals(partial(0, 2), ByteRange.parse("bytes=, 0-1", 100));
  }

  @Test
  void contentRangeStrings() {
    assertEquals("bytes 10-20/100", new ByteRange.Partial(10, 11).contentRange(100));
    assertEquals("bytes 0-0/1", new ByteRange.Partial(0, 1).contentRange(1));
    assertEquals("bytes */100", new ByteRange.Unsatisfiable().contentRange(100));
    assertEquals("bytes */0", new ByteRange.Unsatisfiable().contentRange(0));
    assertEquals(20, new ByteRange.Partial(10, 11).last());
  }

  @Test
  void partialRejectsNonsense() {
    assertThrows(IllegalArgumentException.class, () -> new ByteRange.Partial(-1, 1));
    assertThrows(IllegalArgumentException.class, () -> new ByteRange.Partial(0, 0));
  }

  private static final String ETAG = "\"v1\"";
  private static final String LM = "Sun, 06 Nov 1994 08:49:37 GMT";

  private static ByteRange select(String ifRange) {
    return ByteRange.select("GET", "bytes=0-9", ifRange, ETAG, LM, 100);
  }

  @Test
  void ifRangeWithMatchingStrongEtagKeepsTheRange() {
    assertEquals(partial(0, 10), select("\"v1\""));
    assertEquals(partial(0, 10), select(null));
  }

  @Test
  void ifRangeMismatchOrWeakEtagGivesFull() {
    assertEquals(FULL, select("\"v2\""));
    assertEquals(FULL, select("W/\"v1\"")); // weak tags never match strongly
    assertEquals(
        FULL, ByteRange.select("GET", "bytes=0-9", "\"v1\"", "W/\"v1\"", LM, 100)); // stored weak
    assertEquals(FULL, ByteRange.select("GET", "bytes=0-9", "\"v1\"", null, LM, 100));
  }

  @Test
  void ifRangeDateMustEqualLastModifiedExactly() {
    assertEquals(partial(0, 10), select(LM));
    assertEquals(partial(0, 10), select("Sunday, 06-Nov-94 08:49:37 GMT")); // same instant
    assertEquals(FULL, select("Sun, 06 Nov 1994 08:49:38 GMT")); // later: still Full
    assertEquals(FULL, select("Sun, 06 Nov 1994 08:49:36 GMT"));
    assertEquals(FULL, select("garbage"));
    assertEquals(FULL, ByteRange.select("GET", "bytes=0-9", LM, ETAG, null, 100));
  }

  @Test
  void ifRangeFailureBeatsUnsatisfiable() {
    // A changed representation gets the whole new body, not a 416 against it.
    assertEquals(FULL, ByteRange.select("GET", "bytes=500-", "\"old\"", ETAG, LM, 100));
    assertEquals(UNSATISFIABLE, ByteRange.select("GET", "bytes=500-", ETAG, ETAG, LM, 100));
  }

  @Test
  void onlyGetHasRanges() {
    assertEquals(FULL, ByteRange.select("HEAD", "bytes=0-9", null, ETAG, LM, 100));
    assertEquals(FULL, ByteRange.select("POST", "bytes=0-9", null, ETAG, LM, 100));
    assertEquals(FULL, ByteRange.select("GET", null, ETAG, ETAG, LM, 100));
    assertEquals(partial(0, 10), ByteRange.select("GET", "bytes=0-9", null, null, null, 100));
  }
}
