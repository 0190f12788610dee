package dev.corral.registry;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/** One URL path segment: encoding for URLs Corral writes, decoding of names found in URLs. */
public final class PathSegment {
  private PathSegment() {}

  private static final char[] HEX = "0123456789ABCDEF".toCharArray();

  /** The segment as RFC 3986 pchars, everything else (including {@code /}) as upper-case %XX. */
  public static String encode(String segment) {
    StringBuilder out = new StringBuilder(segment.length() + 8);
    for (byte b : segment.getBytes(StandardCharsets.UTF_8)) {
      int c = b & 0xff;
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || "-._~!$&'()*+,;=:@".indexOf(c) >= 0) {
        out.append((char) c);
      } else {
        out.append('%').append(HEX[c >> 4]).append(HEX[c & 0xf]);
      }
    }
    return out.toString();
  }

  /** Percent-decodes once as strict UTF-8; empty when malformed. */
  public static Optional<String> decode(String raw) {
    if (raw.indexOf('%') < 0) {
      return Optional.of(raw);
    }
    ByteBuffer bytes = ByteBuffer.allocate(raw.length() * 3);
    for (int i = 0; i < raw.length(); i++) {
      char c = raw.charAt(i);
      if (c != '%') {
        bytes.put(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
        continue;
      }
      if (i + 2 >= raw.length()) {
        return Optional.empty();
      }
      int hi = Character.digit(raw.charAt(i + 1), 16);
      int lo = Character.digit(raw.charAt(i + 2), 16);
      if (hi < 0 || lo < 0) {
        return Optional.empty();
      }
      bytes.put((byte) (hi << 4 | lo));
      i += 2;
    }
    bytes.flip();
    try {
      return Optional.of(StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(bytes).toString());
    } catch (CharacterCodingException e) {
      return Optional.empty();
    }
  }

  /** The decoded last path segment of a URL (query and fragment removed); empty when there is none. */
  public static Optional<String> lastOf(String url) {
    String u = url;
    int cut = indexOfAny(u, '#', '?');
    if (cut >= 0) {
      u = u.substring(0, cut);
    }
    int slash = u.lastIndexOf('/');
    String last = slash >= 0 ? u.substring(slash + 1) : u;
    if (last.isEmpty()) {
      return Optional.empty();
    }
    return decode(last);
  }

  /**
   * Whether a decoded name is safe as one segment of a URL Corral hands out and later reads back:
   * not empty, not a dot segment, no slash, backslash or control character, at most 255 chars.
   */
  public static boolean isPlainName(String name) {
    if (name.isEmpty() || name.length() > 255 || name.startsWith(".")) {
      return false;
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c == '/' || c == '\\' || Character.getType(c) == Character.CONTROL) {
        return false;
      }
    }
    return true;
  }

  private static int indexOfAny(String s, char a, char b) {
    int i = s.indexOf(a);
    int j = s.indexOf(b);
    return i < 0 ? j : j < 0 ? i : Math.min(i, j);
  }
}
