package dev.corral.registry;

import java.util.Locale;
import java.util.Optional;

/**
 * Server-driven content negotiation over a client's {@code Accept} header (RFC 9110 12.5.1):
 * the quality a header gives one media type, taken from the most specific range that matches it.
 */
public final class AcceptHeader {
  private AcceptHeader() {}

  /**
   * The quality ({@code 0..1}) the header gives {@code type} (lower-case {@code type/subtype}).
   * No header means {@code *}{@code /*}, so every type gets 1. Malformed entries are skipped.
   */
  public static double quality(Optional<String> accept, String type) {
    if (accept.isEmpty() || accept.get().isBlank()) {
      return 1.0;
    }
    int slash = type.indexOf('/');
    String major = type.substring(0, slash);
    int bestSpecificity = -1;
    double best = 0.0;
    for (String entry : accept.get().split(",")) {
      String[] parts = entry.split(";");
      if (parts.length == 0) {
        continue; // ";;": nothing but separators
      }
      String range = parts[0].trim().toLowerCase(Locale.ROOT);
      int specificity;
      if (range.equals(type)) {
        specificity = 2;
      } else if (range.equals(major + "/*")) {
        specificity = 1;
      } else if (range.equals("*/*")) {
        specificity = 0;
      } else {
        continue;
      }
      double q = 1.0;
      for (int i = 1; i < parts.length; i++) {
        String p = parts[i].trim();
        if (p.length() > 2 && (p.charAt(0) == 'q' || p.charAt(0) == 'Q') && p.charAt(1) == '=') {
          try {
            q = Double.parseDouble(p.substring(2).trim());
          } catch (NumberFormatException e) {
            q = -1;
          }
        }
      }
      if (q < 0 || q > 1 || Double.isNaN(q)) {
        continue;
      }
      if (specificity > bestSpecificity || (specificity == bestSpecificity && q > best)) {
        bestSpecificity = specificity;
        best = q;
      }
    }
    return bestSpecificity < 0 ? 0.0 : best;
  }
}
