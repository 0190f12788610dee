package dev.corral.registry.maven;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * Maven's order of versions, as far as a group's {@code maven-metadata.xml} needs it (the
 * {@code ComparableVersion} rules for the usual shapes): a version is split into numbers and
 * qualifiers at {@code .}, {@code -} and digit/letter changes; numbers compare as numbers; the
 * well-known qualifiers compare as {@code alpha < beta < milestone < rc < snapshot < (release) < sp},
 * other qualifiers after {@code sp} alphabetically; a number beats a qualifier; a missing item
 * counts as {@code 0} or the release, so {@code 1.0 = 1.0.0} and {@code 1.0-rc1 < 1.0 < 1.0.1}.
 */
final class MavenVersionOrder implements Comparator<String> {
  static final MavenVersionOrder INSTANCE = new MavenVersionOrder();

  private static final List<String> QUALIFIERS = List.of("alpha", "beta", "milestone", "rc", "snapshot", "", "sp");

  private MavenVersionOrder() {}

  @Override
  public int compare(String a, String b) {
    List<Object> x = items(a);
    List<Object> y = items(b);
    for (int i = 0; i < Math.max(x.size(), y.size()); i++) {
      int c = compareItem(i < x.size() ? x.get(i) : null, i < y.size() ? y.get(i) : null);
      if (c != 0) {
        return c;
      }
    }
    return 0;
  }

  private static int compareItem(Object a, Object b) {
    if (a == null && b == null) {
      return 0;
    }
    if (a == null) {
      return -compareItem(b, null);
    }
    if (a instanceof BigInteger n) {
      if (b == null) {
        return n.signum();
      }
      return b instanceof BigInteger m ? n.compareTo(m) : 1;
    }
    String q = (String) a;
    if (b == null) {
      return compareQualifier(q, "");
    }
    return b instanceof BigInteger ? -1 : compareQualifier(q, (String) b);
  }

  private static int compareQualifier(String a, String b) {
    int ra = rank(a);
    int rb = rank(b);
    if (ra != rb) {
      return Integer.compare(ra, rb);
    }
    return ra == QUALIFIERS.size() ? a.compareTo(b) : 0;
  }

  private static int rank(String q) {
    int i = QUALIFIERS.indexOf(q);
    return i >= 0 ? i : QUALIFIERS.size();
  }

  private static List<Object> items(String version) {
    List<Object> out = new ArrayList<>();
    String v = version.trim().toLowerCase(Locale.ROOT);
    int i = 0;
    while (i < v.length()) {
      char c = v.charAt(i);
      if (c == '.' || c == '-' || c == '_') {
        i++;
        continue;
      }
      int j = i;
      boolean digits = Character.isDigit(c);
      while (j < v.length() && v.charAt(j) != '.' && v.charAt(j) != '-' && v.charAt(j) != '_'
          && Character.isDigit(v.charAt(j)) == digits) {
        j++;
      }
      String token = v.substring(i, j);
      out.add(digits ? new BigInteger(token) : qualifier(token));
      i = j;
    }
    // Trailing zeros and release qualifiers say nothing: 1.0 = 1 = 1.0-ga.
    while (!out.isEmpty() && (BigInteger.ZERO.equals(out.get(out.size() - 1)) || "".equals(out.get(out.size() - 1)))) {
      out.remove(out.size() - 1);
    }
    return out;
  }

  private static String qualifier(String token) {
    return switch (token) {
      case "a" -> "alpha";
      case "b" -> "beta";
      case "m" -> "milestone";
      case "cr" -> "rc";
      case "ga", "final", "release" -> "";
      default -> token;
    };
  }
}
