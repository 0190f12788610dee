package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

class ConditionalTest {

  private static final String LM = "Sun, 06 Nov 1994 08:49:37 GMT";
  private static final String BEFORE = "Sun, 06 Nov 1994 08:49:36 GMT";
  private static final String AFTER = "Sun, 06 Nov 1994 08:49:38 GMT";

  private static boolean inm(String etag, String ifNoneMatch) {
    return Conditional.notModified("GET", etag, LM, ifNoneMatch, null);
  }

  private static boolean ims(String lastModified, String ifModifiedSince) {
    return Conditional.notModified("GET", "\"e\"", lastModified, null, ifModifiedSince);
  }

  @Test
  void ifNoneMatchUsesWeakComparison() {
    assertTrue(inm("\"abc\"", "\"abc\""));
    assertTrue(inm("W/\"abc\"", "\"abc\""));
    assertTrue(inm("\"abc\"", "W/\"abc\""));
    assertTrue(inm("W/\"abc\"", "W/\"abc\""));
    assertFalse(inm("\"abc\"", "\"abd\""));
    assertFalse(inm("\"abc\"", "\"ABC\""));
  }

  @Test
  void ifNoneMatchList() {
    assertTrue(inm("\"b\"", "\"a\", \"b\""));
    assertTrue(inm("\"b\"", "\"a\",W/\"b\""));
    assertTrue(inm("\"b\"", " , \"a\" ,\t\"b\" , "));
    assertFalse(inm("\"c\"", "\"a\", \"b\""));
    // A comma inside the quotes belongs to the tag.
    assertTrue(inm("\"a,b\"", "\"x\", \"a,b\""));
    assertFalse(inm("\"a\"", "\"a,b\""));
    assertFalse(inm("\"b\"", "\"a,b\""));
  }

  @Test
  void ifNoneMatchStarMatchesAnyStoredRepresentation() {
    assertTrue(inm("\"abc\"", "*"));
    assertTrue(inm(null, " * "));
    assertTrue(Conditional.notModified("HEAD", null, null, "*", null));
  }

  @Test
  void unquotedTagsAreComparedLeniently() {
    assertTrue(inm("abc", "abc"));
    assertTrue(inm("abc", "\"x\", abc"));
    assertTrue(inm("\"abc\"", "abc"));
  }

  @Test
  void ifNoneMatchWithoutStoredEtagNeverMatches() {
    assertFalse(inm(null, "\"abc\""));
  }

  @Test
  void ifNoneMatchPresentMeansIfModifiedSinceIsIgnored() {
    // Dates alone would say 304; the tag says changed.
    assertFalse(Conditional.notModified("GET", "\"new\"", LM, "\"old\"", AFTER));
    // Dates alone would say 200; the tag says unchanged.
    assertTrue(Conditional.notModified("GET", "\"same\"", LM, "\"same\"", BEFORE));
    // Even an empty If-None-Match counts as present.
    assertFalse(Conditional.notModified("GET", "\"e\"", LM, "", AFTER));
  }

  @Test
  void ifModifiedSinceComparesDates() {
    assertTrue(ims(LM, LM)); // equal: not modified
    assertTrue(ims(LM, AFTER));
    assertFalse(ims(LM, BEFORE));
  }

  @Test
  void ifModifiedSinceIgnoredWhenUnusable() {
    assertFalse(ims(null, AFTER)); // no Last-Modified
    assertFalse(ims("yesterday", AFTER)); // unparseable Last-Modified
    assertFalse(ims(LM, "not a date"));
    assertFalse(ims(LM, ""));
    assertFalse(ims(LM, "-1"));
  }

  @Test
  void ifModifiedSinceAcceptsObsoleteDateForms() {
    assertTrue(ims(LM, "Sunday, 06-Nov-94 08:49:37 GMT"));
    assertFalse(ims(LM, "Sunday, 06-Nov-94 08:49:36 GMT"));
    assertTrue(ims(LM, "Sun Nov  6 08:49:37 1994"));
    assertFalse(ims(LM, "Sun Nov  6 08:49:36 1994"));
    // Stored Last-Modified in an obsolete form too.
    assertTrue(ims("Sun Nov  6 08:49:37 1994", LM));
  }

  @Test
  void onlyGetAndHead() {
    assertTrue(Conditional.notModified("HEAD", "\"a\"", LM, "\"a\"", null));
    assertTrue(Conditional.notModified("HEAD", "\"a\"", LM, null, LM));
    for (String method : List.of("POST", "PUT", "DELETE", "OPTIONS", "get")) {
      assertFalse(Conditional.notModified(method, "\"a\"", LM, "\"a\"", null), method);
      assertFalse(Conditional.notModified(method, "\"a\"", LM, "*", null), method);
      assertFalse(Conditional.notModified(method, "\"a\"", LM, null, LM), method);
    }
  }

  @Test
  void noConditionalHeadersMeansFullResponse() {
    assertFalse(Conditional.notModified("GET", "\"a\"", LM, null, null));
  }

  @Test
  void httpDateForms() {
    Instant expected = Instant.parse("1994-11-06T08:49:37Z");
    assertEquals(expected, HttpDate.parse(LM));
    assertEquals(expected, HttpDate.parse(" " + LM + " "));
    assertEquals(expected, HttpDate.parse("Sunday, 06-Nov-94 08:49:37 GMT"));
    assertEquals(expected, HttpDate.parse("Sun Nov  6 08:49:37 1994"));
    assertEquals(
        Instant.parse("2026-12-02T10:00:00Z"), HttpDate.parse("Wednesday, 02-Dec-26 10:00:00 GMT"));
    assertEquals(
        Instant.parse("2026-11-16T10:00:00Z"), HttpDate.parse("Mon Nov 16 10:00:00 2026"));
    assertNull(HttpDate.parse("Mon, 06 Nov 1994 08:49:37 GMT")); // wrong weekday
    assertNull(HttpDate.parse("1994-11-06T08:49:37Z"));
    assertNull(HttpDate.parse(null));
  }

  @Test
  void entityTagParsing() {
    assertEquals(new EntityTag(false, "abc"), EntityTag.parse("\"abc\""));
    assertEquals(new EntityTag(true, "abc"), EntityTag.parse("W/\"abc\""));
    assertEquals(new EntityTag(false, ""), EntityTag.parse("\"\""));
    assertNull(EntityTag.parse("  "));
    assertEquals(
        List.of(new EntityTag(false, "a"), new EntityTag(true, "b,c"), new EntityTag(false, "*")),
        EntityTag.parseList("\"a\", W/\"b,c\" ,*"));
  }
}
