package dev.corral.registry.pypi;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The anchors of a simple HTML page (PEP 503): each {@code <a ...>} start tag with its
 * attributes, and where its {@code href} attribute is in the text, so that a rewrite can replace
 * exactly that attribute and copy everything else as it was. Comments are skipped. Also finds a
 * {@code <base href>}.
 *
 * <p>The page is read as ISO-8859-1, one char per byte, so copying it back is byte for byte
 * whatever its encoding; attribute values are turned back into UTF-8 text by {@link #text}.
 */
final class HtmlAnchors {
  private HtmlAnchors() {}

  /** One attribute as written: {@code [start, end)} spans {@code name=value} in the page. */
  record Attribute(String name, String rawValue, int start, int end) {
    /** The value with character references decoded and the bytes read as UTF-8. */
    String value() {
      return text(decodeEntities(rawValue));
    }
  }

  /** One start tag: its lower-case name and attributes. */
  record Tag(String name, List<Attribute> attributes) {
    Optional<Attribute> attribute(String name) {
      return attributes.stream().filter(a -> a.name.equals(name)).findFirst();
    }
  }

  /** Every {@code <a>} and {@code <base>} start tag in document order. */
  static List<Tag> tags(String page) {
    List<Tag> out = new ArrayList<>();
    int i = 0;
    int n = page.length();
    while (i < n) {
      int lt = page.indexOf('<', i);
      if (lt < 0) {
        break;
      }
      if (page.startsWith("<!--", lt)) {
        int end = page.indexOf("-->", lt + 4);
        i = end < 0 ? n : end + 3;
        continue;
      }
      int j = lt + 1;
      int nameStart = j;
      while (j < n && isNameChar(page.charAt(j))) {
        j++;
      }
      String tagName = page.substring(nameStart, j).toLowerCase(Locale.ROOT);
      if (tagName.isEmpty()) {
        i = lt + 1;
        continue;
      }
      List<Attribute> attributes = new ArrayList<>();
      j = attributes(page, j, attributes);
      if (tagName.equals("a") || tagName.equals("base")) {
        out.add(new Tag(tagName, attributes));
      }
      i = j;
    }
    return out;
  }

  /** Reads attributes from {@code j} up to and past the tag's {@code >}; returns the index after it. */
  private static int attributes(String page, int j, List<Attribute> out) {
    int n = page.length();
    while (j < n) {
      char c = page.charAt(j);
      if (c == '>') {
        return j + 1;
      }
      if (Character.isWhitespace(c) || c == '/') {
        j++;
        continue;
      }
      int start = j;
      while (j < n && !Character.isWhitespace(page.charAt(j)) && "=>/".indexOf(page.charAt(j)) < 0) {
        j++;
      }
      String name = page.substring(start, j).toLowerCase(Locale.ROOT);
      int k = j;
      while (k < n && Character.isWhitespace(page.charAt(k))) {
        k++;
      }
      String value = "";
      if (k < n && page.charAt(k) == '=') {
        k++;
        while (k < n && Character.isWhitespace(page.charAt(k))) {
          k++;
        }
        if (k < n && (page.charAt(k) == '"' || page.charAt(k) == '\'')) {
          char q = page.charAt(k);
          int close = page.indexOf(q, k + 1);
          if (close < 0) {
            return n; // unterminated: the rest of the page is this value; give up on the tag
          }
          value = page.substring(k + 1, close);
          j = close + 1;
        } else {
          int vs = k;
          while (k < n && !Character.isWhitespace(page.charAt(k)) && page.charAt(k) != '>') {
            k++;
          }
          value = page.substring(vs, k);
          j = k;
        }
      }
      if (!name.isEmpty()) {
        out.add(new Attribute(name, value, start, j));
      }
    }
    return n;
  }

  private static boolean isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  }

  /** ISO-8859-1 chars (bytes) read as UTF-8 text. */
  static String text(String latin1) {
    return new String(latin1.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1),
        java.nio.charset.StandardCharsets.UTF_8);
  }

  /** Decodes {@code &amp; &lt; &gt; &quot; &apos; &#NN; &#xHH;}; others stay as written. */
  static String decodeEntities(String s) {
    if (s.indexOf('&') < 0) {
      return s;
    }
    StringBuilder out = new StringBuilder(s.length());
    int i = 0;
    while (i < s.length()) {
      char c = s.charAt(i);
      int semi = c == '&' ? s.indexOf(';', i) : -1;
      if (semi < 0 || semi - i > 10) {
        out.append(c);
        i++;
        continue;
      }
      String ref = s.substring(i + 1, semi);
      String decoded = switch (ref) {
        case "amp" -> "&";
        case "lt" -> "<";
        case "gt" -> ">";
        case "quot" -> "\"";
        case "apos" -> "'";
        default -> numeric(ref);
      };
      if (decoded == null) {
        out.append(c);
        i++;
      } else {
        out.append(decoded);
        i = semi + 1;
      }
    }
    return out.toString();
  }

  private static String numeric(String ref) {
    try {
      int cp;
      if (ref.startsWith("#x") || ref.startsWith("#X")) {
        cp = Integer.parseInt(ref.substring(2), 16);
      } else if (ref.startsWith("#")) {
        cp = Integer.parseInt(ref.substring(1));
      } else {
        return null;
      }
      // Back to ISO-8859-1 "bytes" (UTF-8 encoded) so text() reads it like any other char.
      return new String(new String(Character.toChars(cp)).getBytes(java.nio.charset.StandardCharsets.UTF_8),
          java.nio.charset.StandardCharsets.ISO_8859_1);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Escapes a value for a double-quoted attribute. */
  static String escape(String value) {
    return value.replace("&", "&amp;").replace("\"", "&quot;").replace("<", "&lt;").replace(">", "&gt;");
  }
}
