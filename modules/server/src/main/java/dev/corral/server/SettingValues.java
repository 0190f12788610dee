package dev.corral.server;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parsing and checking of single values, shared by the command line, environment and HOCON. */
final class SettingValues {
  static final Pattern REPO_NAME = Pattern.compile("[a-z0-9][a-z0-9._-]*");

  private static final Pattern SIZE =
      Pattern.compile("\\s*(\\d+)\\s*(B|KiB|MiB|GiB|TiB)?\\s*", Pattern.CASE_INSENSITIVE);

  static final String SIZE_PROBLEM = " is not a size (bytes, or with KiB, MiB, GiB, TiB)";
  /** The largest size a setting takes: the largest whole number of TiB that fits a long. */
  static final long LARGEST_SIZE = (Long.MAX_VALUE >> 40) << 40;
  static final String DURATION_EXAMPLES = "e.g. 500ms, 5s, 2m";

  private SettingValues() {}

  static String quoted(String raw) {
    return '"' + raw + '"';
  }

  /**
   * A rejected URL as it may be shown: its user information and its query (where a JDBC URL may
   * carry {@code password=}) replaced by {@code ***}.
   */
  static String withoutSecrets(String url) {
    String out = url;
    int query = out.indexOf('?');
    if (query >= 0) {
      out = out.substring(0, query) + "?***";
    }
    int scheme = out.indexOf("//");
    int at = out.lastIndexOf('@', query >= 0 ? query : out.length() - 1);
    if (scheme >= 0 && at > scheme) {
      out = out.substring(0, scheme + 2) + "***" + out.substring(at);
    }
    return out;
  }

  /** Whether {@code text} is written as a size (it may still be too large for a long). */
  static boolean isSizeShaped(String text) {
    return SIZE.matcher(text).matches();
  }

  /** Whether a size was written without a unit, so that it counts bytes. */
  static boolean isBareSize(String text) {
    Matcher m = SIZE.matcher(text);
    return m.matches() && m.group(2) == null;
  }

  /** A size as a user would write it: in the largest binary unit that divides it, else in bytes. */
  static String sizeText(long bytes) {
    String[] units = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < units.length; i++) {
      int shift = 40 - 10 * i;
      if (bytes != 0 && bytes % (1L << shift) == 0) {
        return (bytes >> shift) + " " + units[i];
      }
    }
    return bytes == 1 ? "1 byte" : bytes + " bytes";
  }

  /** Bytes, or a number with KiB, MiB, GiB or TiB (binary multiples); empty if not a size. */
  static OptionalLong size(String text) {
    Matcher m = SIZE.matcher(text);
    if (!m.matches()) {
      return OptionalLong.empty();
    }
    int shift =
        m.group(2) == null
            ? 0
            : switch (m.group(2).toLowerCase(Locale.ROOT)) {
              case "kib" -> 10;
              case "mib" -> 20;
              case "gib" -> 30;
              case "tib" -> 40;
              default -> 0;
            };
    try {
      long n = Long.parseLong(m.group(1));
      if (n > (Long.MAX_VALUE >> shift)) {
        return OptionalLong.empty();
      }
      return OptionalLong.of(n << shift);
    } catch (NumberFormatException tooLong) {
      return OptionalLong.empty();
    }
  }

  /**
   * Whether a duration was written without a unit letter at its end. HOCON reads any number
   * without one as milliseconds, and its numbers include forms such as {@code +30}, {@code .5},
   * {@code 30.} and {@code 1e3}.
   */
  static boolean lacksUnit(String text) {
    String t = text.strip();
    if (t.isEmpty()) {
      return true;
    }
    char last = Character.toLowerCase(t.charAt(t.length() - 1));
    return last < 'a' || last > 'z';
  }

  /** Why {@code text} is not a duration: a unit to add if it is a number, else the examples. */
  static String notADuration(String text) {
    boolean number = lacksUnit(text) && text.chars().anyMatch(Character::isDigit);
    return quoted(text) + " is not a duration (" + (number ? "add a unit, " : "") + DURATION_EXAMPLES + ")";
  }

  /** A duration as a user would write it: in the largest unit that divides it exactly. */
  static String durationText(Duration d) {
    long nanos = d.toNanos();
    String[] units = {"d", "h", "m", "s", "ms", "us"};
    long[] sizes = {86_400_000_000_000L, 3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L};
    for (int i = 0; i < units.length; i++) {
      if (nanos != 0 && nanos % sizes[i] == 0) {
        return nanos / sizes[i] + units[i];
      }
    }
    return nanos + "ns";
  }

  /** The port 0-65535, or -1. */
  static int port(String text) {
    try {
      int port = Integer.parseInt(text.trim());
      return port >= 0 && port <= 65535 ? port : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** Why {@code url} cannot be an upstream or public URL, or null if it can. */
  static String urlProblem(String url) {
    String problem = quoted(withoutSecrets(url)) + " is not an absolute http or https URL with a host";
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException e) {
      return problem;
    }
    String scheme = uri.getScheme();
    if (scheme == null
        || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
        || uri.getHost() == null
        || uri.getHost().isEmpty()) {
      return problem;
    }
    if (uri.getRawUserInfo() != null) {
      // A password in the URL would end up in logs; credentials have their own setting.
      return "the URL must not contain user info (use credentials { ... })";
    }
    // The request's path is appended to the URL: after a query or a fragment it would be part of
    // them, every path would ask the same upstream URL, and one body would be cached under every
    // key. (What of a request's query goes upstream is a generic repository's query setting.)
    if (uri.getRawQuery() != null) {
      return quoted(withoutSecrets(url)) + " has a query (?...): the request's path is appended to this URL,"
          + " so it must end with its path";
    }
    if (uri.getRawFragment() != null) {
      return quoted(withoutSecrets(url)) + " has a fragment (#...): the request's path is appended to this URL,"
          + " so it must end with its path";
    }
    if (uri.getPort() == 0 || uri.getPort() > 65535) {
      return quoted(withoutSecrets(url)) + " has port " + uri.getPort() + ": a port is between 1 and 65535";
    }
    return null;
  }

  /** Why {@code name} cannot be a repository name, or null if it can. */
  static String repoNameProblem(String name) {
    if (name.equals("v2")) {
      return "v2 is not a repository name: /v2/ is where OCI repositories are served";
    }
    return REPO_NAME.matcher(name).matches() ? null : "name must match " + REPO_NAME.pattern();
  }

  /** Why {@code type} is not a repository type, or null if it is. */
  static String repoTypeProblem(String type) {
    return RepoSettings.KNOWN_TYPES.contains(type)
        ? null
        : "unknown type " + quoted(type) + " (known: " + String.join(", ", RepoSettings.KNOWN_TYPES) + ")";
  }
}
