package dev.corral.http;

import java.util.List;
import java.util.Locale;

/**
 * Whether a request's {@code Accept-Encoding} (RFC 9110 12.5.3) takes a gzip-encoded answer.
 *
 * <p>gzip is chosen when its weight is above zero: named as {@code gzip} or {@code x-gzip}, or
 * else covered by {@code *}; and {@code identity}, when it is named explicitly, does not weigh
 * more. So {@code gzip;q=0} (or {@code *;q=0} without gzip) means identity; a missing or empty
 * header means identity; {@code identity;q=0} with gzip acceptable means gzip. A request that
 * refuses both is answered identity all the same (the RFC lets a server ignore the header rather
 * than answer 415). An unparseable weight counts as 0: a coding is never guessed into.
 */
final class AcceptEncoding {
  private AcceptEncoding() {}

  /** @param values every {@code Accept-Encoding} line of the request, in order (none: identity) */
  static boolean gzip(List<String> values) {
    double gzip = -1;
    double star = -1;
    double identity = -1;
    for (String value : values) {
      for (String member : value.split(",")) {
        String[] parts = member.split(";");
        String coding = parts[0].trim().toLowerCase(Locale.ROOT);
        if (coding.isEmpty()) {
          continue;
        }
        double q = weight(parts);
        switch (coding) {
          case "gzip", "x-gzip" -> gzip = Math.max(gzip, q);
          case "*" -> star = Math.max(star, q);
          case "identity" -> identity = Math.max(identity, q);
          default -> { }
        }
      }
    }
    double g = gzip >= 0 ? gzip : Math.max(star, 0);
    return g > 0 && (identity < 0 || identity <= g);
  }

  /** The member's {@code q} parameter: 1 when absent, 0 when malformed or out of range. */
  private static double weight(String[] parts) {
    for (int i = 1; i < parts.length; i++) {
      String p = parts[i].trim();
      int eq = p.indexOf('=');
      if (eq > 0 && p.substring(0, eq).trim().equalsIgnoreCase("q")) {
        try {
          double q = Double.parseDouble(p.substring(eq + 1).trim());
          return q >= 0 && q <= 1 ? q : 0;
        } catch (NumberFormatException e) {
          return 0;
        }
      }
    }
    return 1;
  }
}
