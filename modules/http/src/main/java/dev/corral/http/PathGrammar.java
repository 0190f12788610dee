package dev.corral.http;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/** The character rules behind {@link RequestPath#parse}; not part of the API. */
final class PathGrammar {
  private PathGrammar() {}

  /** Whether {@code name} matches {@code [a-z0-9][a-z0-9._-]*} (checked by hand: on every request). */
  static boolean isRepoName(String name) {
    if (name.isEmpty()) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      boolean alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-'))) {
        return false;
      }
    }
    return true;
  }

  /** Percent-decodes once and decodes the bytes as strict UTF-8. */
  static String decode(String rawSegment) {
    if (rawSegment.indexOf('%') < 0) {
      return rawSegment; // ASCII only, checked by the caller
    }
    ByteBuffer bytes = ByteBuffer.allocate(rawSegment.length());
    for (int i = 0; i < rawSegment.length(); i++) {
      char c = rawSegment.charAt(i);
      if (c != '%') {
        bytes.put((byte) c);
        continue;
      }
      if (i + 2 >= rawSegment.length()) {
        throw new IllegalArgumentException("truncated percent-encoding in path");
      }
      int hi = Character.digit(rawSegment.charAt(i + 1), 16);
      int lo = Character.digit(rawSegment.charAt(i + 2), 16);
      if (hi < 0 || lo < 0) {
        throw new IllegalArgumentException("invalid percent-encoding in path");
      }
      bytes.put((byte) (hi << 4 | lo));
      i += 2;
    }
    bytes.flip();
    try {
      // The JDK decoder rejects overlong forms (%c0%ae), encoded surrogates and code points
      // above U+10FFFF when told to report instead of replace.
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(bytes)
          .toString();
    } catch (CharacterCodingException e) {
      throw new IllegalArgumentException("invalid UTF-8 in path after percent-decoding");
    }
  }

  /** Returns why a decoded segment is unacceptable, or null. */
  static String checkDecoded(String segment, boolean allowEncodedSlash) {
    for (int i = 0; i < segment.length(); i++) {
      char c = segment.charAt(i);
      if (Character.getType(c) == Character.CONTROL) { // C0, DEL and C1
        return "control character in path";
      }
      if (c == '\\') {
        return "backslash in path";
      }
    }
    if (isDotSegment(segment)) {
      return "'.' or '..' segment in path";
    }
    if (segment.indexOf('/') >= 0) {
      String[] pieces = segment.split("/", -1);
      for (String piece : pieces) {
        if (isDotSegment(piece)) {
          return "encoded slash (%2F) makes a '.' or '..' segment";
        }
      }
      if (!allowEncodedSlash) {
        return "encoded slash (%2F) in path";
      }
      for (String piece : pieces) {
        if (piece.isEmpty()) {
          return "encoded slash (%2F) makes an empty path segment";
        }
      }
    }
    return null;
  }

  /** {@code .} or {@code ..}, alone or with a {@code ;param} suffix. */
  private static boolean isDotSegment(String s) {
    int semi = s.indexOf(';');
    String name = semi < 0 ? s : s.substring(0, semi);
    return name.equals(".") || name.equals("..");
  }

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  /** Appends one decoded segment as RFC 3986 pchars; everything else as upper-case %XX. */
  static void encodeSegment(String segment, StringBuilder out) {
    byte[] bytes = segment.getBytes(StandardCharsets.UTF_8);
    for (byte b : bytes) {
      int c = b & 0xff;
      if (isPchar(c)) {
        out.append((char) c);
      } else {
        out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
  }

  private static boolean isPchar(int c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      return true;
    }
    switch (c) {
      case '-': case '.': case '_': case '~': // unreserved
      case '!': case '$': case '&': case '\'': case '(': case ')': // sub-delims
      case '*': case '+': case ',': case ';': case '=':
      case ':': case '@':
        return true;
      default:
        return false;
    }
  }
}
