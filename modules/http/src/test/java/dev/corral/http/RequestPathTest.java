package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class RequestPathTest {

  private static RequestPath.Ok ok(String raw, boolean allowEncodedSlash) {
    return assertInstanceOf(RequestPath.Ok.class, RequestPath.parse(raw, allowEncodedSlash), raw);
  }

  private static String rejected(String raw, boolean allowEncodedSlash) {
    return assertInstanceOf(
            RequestPath.Rejected.class, RequestPath.parse(raw, allowEncodedSlash), raw)
        .reason();
  }

  @Test
  void splitsRepoAndDecodedSegments() {
    RequestPath.Ok p = ok("/maven/org/example/lib/1.0/lib-1.0.jar", false);
    assertEquals("maven", p.repo());
    assertEquals(List.of("org", "example", "lib", "1.0", "lib-1.0.jar"), p.segments());
    assertEquals("/org/example/lib/1.0/lib-1.0.jar", p.upstreamPath());
    assertFalse(p.directory());
  }

  @Test
  void decodesOnceAndReencodesWithUpperCaseHex() {
    RequestPath.Ok p = ok("/generic/a%20b/caf%c3%a9%7e%41", false);
    assertEquals(List.of("a b", "café~A"), p.segments());
    // '~' and 'A' are unreserved: re-encoded as themselves; space and é as upper-case %XX.
    assertEquals("/a%20b/caf%C3%A9~A", p.upstreamPath());
  }

  @Test
  void keepsPcharsRawAndEncodesTheRest() {
    RequestPath.Ok p = ok("/go/x/@v/v1.0.0+incompatible.info", false);
    assertEquals("/x/@v/v1.0.0+incompatible.info", p.upstreamPath());
    // sub-delims, ':' and '@' kept; gen-delims other than ':'/'@' and other visible ASCII encoded
    RequestPath.Ok q = ok("/r/!$&'()*+,;=:@%5b%5d%3f%23%25%22%3c%3e%5e%60%7b%7c%7d", false);
    assertEquals("!$&'()*+,;=:@[]?#%\"<>^`{|}", q.segments().get(0));
    assertEquals("/!$&'()*+,;=:@%5B%5D%3F%23%25%22%3C%3E%5E%60%7B%7C%7D", q.upstreamPath());
  }

  @Test
  void rawNonPcharAsciiIsAcceptedAndEncoded() {
    // Pekko's strict parser rejects these before we see them; in relaxed mode they reach us.
    RequestPath.Ok p = ok("/r/a|b{c}", false);
    assertEquals("/a%7Cb%7Bc%7D", p.upstreamPath());
  }

  @Test
  void npmScopedNameWithAllowedEncodedSlash() {
    RequestPath.Ok p = ok("/npm/@demo%2fscoped", true);
    assertEquals(List.of("@demo/scoped"), p.segments());
    assertEquals("/@demo%2Fscoped", p.upstreamPath());
    RequestPath.Ok tarball = ok("/npm/@demo/scoped/-/scoped-1.0.0.tgz", true);
    assertEquals("/@demo/scoped/-/scoped-1.0.0.tgz", tarball.upstreamPath());
  }

  @Test
  void trailingSlashIsKeptForDirectoryStyleUrls() {
    RequestPath.Ok p = ok("/pypi/simple/requests/", false);
    assertEquals(List.of("simple", "requests"), p.segments());
    assertEquals("/simple/requests/", p.upstreamPath());
    assertTrue(p.directory());
  }

  @Test
  void doubleEncodingStaysLiteral() {
    // Decoded exactly once: the segment is the literal name "%2e%2e", and upstream sees it
    // encoded again, byte for byte what the client sent.
    RequestPath.Ok p = ok("/r/%252e%252e/x", false);
    assertEquals(List.of("%2e%2e", "x"), p.segments());
    assertEquals("/%252e%252e/x", p.upstreamPath());
    RequestPath.Ok slash = ok("/r/a%252fb", false);
    assertEquals(List.of("a%2fb"), slash.segments());
  }

  @Test
  void fullwidthDotIsNotADot() {
    RequestPath.Ok p = ok("/r/%ef%bc%8e%ef%bc%8e/x", false);
    assertEquals(List.of("\uFF0E\uFF0E", "x"), p.segments());
    assertEquals("/%EF%BC%8E%EF%BC%8E/x", p.upstreamPath());
  }

  @Test
  void dotsInsideNamesAreFine() {
    RequestPath.Ok p = ok("/r/.npmrc/...x/a..b/..../x.", false);
    assertEquals(List.of(".npmrc", "...x", "a..b", "....", "x."), p.segments());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/r/a/../b", "/r/../b", "/r/a/./b", "/r/a/..", "/r/a/.", "/r/a/../",
        "/r/%2e%2e/b", "/r/%2E%2E/b", "/r/.%2E/b", "/r/%2E./b", "/r/%2e/b", "/r/.%2e/",
        "/r/..;/admin", "/r/..;x=1/admin", "/r/.;/a", "/r/%2e%2e%3b/admin"
      })
  void rejectsDotSegments(String raw) {
    assertTrue(rejected(raw, true).contains("'.' or '..'"), raw);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "/r/a%2fb        | encoded slash",
        "/r/a%2Fb        | encoded slash",
        "/r/%2e%2e%2fetc | '.' or '..'",
      })
  void rejectsEncodedSlashUnlessAllowed(String raw, String reason) {
    assertTrue(rejected(raw, false).contains(reason.trim()), raw);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/npm/a%2f..%2fb", "/npm/%2e%2e%2fb", "/npm/a%2f%2e", "/npm/..%2f", "/npm/%2f..",
        "/npm/a%2f..;x"
      })
  void allowedEncodedSlashNeverMakesDotPieces(String raw) {
    assertTrue(rejected(raw, true).contains("'.' or '..'"), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/npm/a%2f%2fb", "/npm/%2fa", "/npm/a%2f", "/npm/%2f"})
  void allowedEncodedSlashNeverMakesEmptyPieces(String raw) {
    assertTrue(rejected(raw, true).contains("empty path segment"), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/r/a\\b", "/r/..\\x", "/r/a%5cb", "/r/%5C..%5Cx", "/r/%5c"})
  void rejectsBackslashes(String raw) {
    assertTrue(rejected(raw, true).contains("backslash"), raw);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/r/a%00b", "/r/%00", "/r/a%0ab", "/r/a%0Db", "/r/a%1fb", "/r/a%7fb", "/r/a%c2%85b",
        "/r/a\u0000b", "/r/a\nb", "/r/a\tb", "/r/a\u007fb"
      })
  void rejectsControlCharacters(String raw) {
    assertTrue(rejected(raw, true).contains("control character"), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/r/%zz", "/r/a%g0", "/r/a%0g", "/r/%-1", "/r/%%41"})
  void rejectsInvalidPercentEncoding(String raw) {
    assertEquals("invalid percent-encoding in path", rejected(raw, true), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/r/%4", "/r/a%", "/r/abc%e"})
  void rejectsTruncatedPercentEncoding(String raw) {
    assertEquals("truncated percent-encoding in path", rejected(raw, true), raw);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/r/%c0%ae%c0%ae/x", // overlong '.'
        "/r/%c0%af", // overlong '/'
        "/r/%e0%80%ae", // 3-byte overlong '.'
        "/r/%c1%9c", // overlong '\'
        "/r/%c0%80", // overlong NUL
        "/r/%ff", "/r/%80", "/r/%c3", "/r/%ed%a0%80", // lone byte, continuation, truncated, surrogate
        "/r/%f4%90%80%80" // above U+10FFFF
      })
  void rejectsInvalidUtf8(String raw) {
    assertEquals("invalid UTF-8 in path after percent-decoding", rejected(raw, true), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/r//a", "/r/a//b", "/r/a//", "/r/a///"})
  void rejectsEmptySegments(String raw) {
    assertTrue(rejected(raw, true).contains("empty path segment"), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/r", "/r/", "/maven"})
  void rejectsMissingPathAfterRepo(String raw) {
    assertTrue(rejected(raw, true).startsWith("missing path after repository"), raw);
  }

  @ParameterizedTest
  @ValueSource(strings = {"/Maven/a", "/mA/a", "/.m/a", "/-m/a", "/_m/a", "/m%61ven/a", "/m~/a", "/../a", "/m:/a", "/m@/a"})
  void rejectsBadRepoNames(String raw) {
    assertTrue(rejected(raw, true).startsWith("repository name must match"), raw);
  }

  @Test
  void acceptsRepoNameGrammar() {
    assertEquals("my-repo_2.x", ok("/my-repo_2.x/a", false).repo());
    assertEquals("0", ok("/0/a", false).repo());
    assertEquals("a.-_", ok("/a.-_/x", false).repo());
  }

  @Test
  void rejectsStructuralProblems() {
    assertEquals("empty path", rejected("", false));
    assertEquals("empty path", rejected(null, false));
    assertEquals("path must start with '/'", rejected("r/a", false));
    assertEquals("path must start with '/'", rejected("http://upstream.example/r/a", false));
    assertEquals("missing repository name", rejected("/", false));
    assertEquals("missing repository name", rejected("//a", false));
    assertTrue(rejected("/r/a?x=1", false).contains("query"));
    assertTrue(rejected("/r/a#f", false).contains("fragment"));
    assertTrue(rejected("/r/a b", false).contains("space"));
    assertTrue(rejected("/r/caf\u00e9", false).contains("non-ASCII"));
    assertTrue(rejected("/r/\uFF0E\uFF0E", false).contains("non-ASCII"));
  }

  @Test
  void lengthLimitIsOnTheRawPath() {
    String prefix = "/r/";
    String atLimit = prefix + "a".repeat(RequestPath.MAX_RAW_LENGTH - prefix.length());
    assertEquals(4096, atLimit.length());
    ok(atLimit, false);
    assertEquals(
        "path longer than 4096 bytes", rejected(atLimit + "a", false));
    // Checked before anything else: an over-long path with other faults still reports length.
    assertEquals(
        "path longer than 4096 bytes", rejected("/r/%zz/../" + "a".repeat(5000), false));
    // Encoded characters count in their raw (encoded) length.
    String encoded = prefix + "%41".repeat(1365); // 3 + 4095 = 4098 raw, 1365 decoded
    assertEquals("path longer than 4096 bytes", rejected(encoded, false));
  }

  @Test
  void okCopiesSegments() {
    List<String> mutable = new java.util.ArrayList<>(List.of("a"));
    RequestPath.Ok p = new RequestPath.Ok("r", mutable, "/a");
    mutable.add("b");
    assertEquals(List.of("a"), p.segments());
  }
}
