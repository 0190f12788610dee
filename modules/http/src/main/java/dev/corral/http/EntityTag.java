package dev.corral.http;

import java.util.ArrayList;
import java.util.List;

/**
 * An entity tag (RFC 9110 8.8.3). Parsing is lenient: a value without quotes is taken whole as the
 * opaque tag, so an upstream that sends unquoted ETags still matches what clients send back.
 */
record EntityTag(boolean weak, String opaque) {

  /** Null when the value is null or blank. */
  static EntityTag parse(String value) {
    if (value == null) {
      return null;
    }
    String v = value.trim();
    boolean weak = v.startsWith("W/");
    if (weak) {
      v = v.substring(2);
    }
    if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
      v = v.substring(1, v.length() - 1);
    } else if (v.isEmpty()) {
      return null;
    }
    return new EntityTag(weak, v);
  }

  /**
   * The members of an If-None-Match style list; {@code *} comes back as an unquoted tag "*".
   * Commas inside quotes belong to the tag.
   */
  static List<EntityTag> parseList(String header) {
    List<EntityTag> tags = new ArrayList<>();
    int i = 0;
    int n = header.length();
    while (i < n) {
      char c = header.charAt(i);
      if (c == ',' || c == ' ' || c == '\t') {
        i++;
        continue;
      }
      int start = i;
      int quote = header.startsWith("W/\"", i) ? i + 2 : c == '"' ? i : -1;
      int end;
      if (quote >= 0) {
        int close = header.indexOf('"', quote + 1);
        end = close < 0 ? n : close + 1;
      } else {
        int comma = header.indexOf(',', i);
        end = comma < 0 ? n : comma;
      }
      EntityTag tag = parse(header.substring(start, end));
      if (tag != null) {
        tags.add(tag);
      }
      i = end;
    }
    return tags;
  }

  /** Weak comparison: the opaque tags are equal, weak or not. */
  boolean weaklyMatches(EntityTag other) {
    return other != null && opaque.equals(other.opaque);
  }

  /** Strong comparison: neither is weak and the opaque tags are equal. */
  boolean stronglyMatches(EntityTag other) {
    return other != null && !weak && !other.weak && opaque.equals(other.opaque);
  }
}
