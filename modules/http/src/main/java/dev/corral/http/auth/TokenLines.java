package dev.corral.http.auth;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Parses the tokens file: one credential a line, {@code NAME SHA256HEX-OF-TOKEN [REPO,REPO...]}
 * separated by whitespace; {@code #} starts a comment, blank lines are skipped. A bad line is
 * reported by its number and what is wrong with it, never with its content (the hash is a
 * secret's fingerprint).
 */
public final class TokenLines {
  private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._@-]{0,63}");
  private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]{64}");

  private TokenLines() {}

  /** A line of the tokens file is wrong; the message is one line and names its number. */
  public static final class Malformed extends IllegalArgumentException {
    Malformed(int line, String what) {
      super("line " + line + ": " + what);
    }
  }

  /**
   * The credentials in {@code text}.
   *
   * @param knownRepos the configured repositories: a line naming another is an error
   * @throws Malformed at the first bad line
   */
  public static List<ClientToken> parse(String text, Set<String> knownRepos) {
    List<ClientToken> tokens = new ArrayList<>();
    Map<String, Integer> names = new HashMap<>();
    String[] lines = text.split("\r?\n", -1);
    for (int i = 0; i < lines.length; i++) {
      int n = i + 1;
      String line = lines[i];
      int hash = line.indexOf('#');
      if (hash >= 0) {
        line = line.substring(0, hash);
      }
      line = line.strip();
      if (line.isEmpty()) {
        continue;
      }
      String[] fields = line.split("\\s+");
      if (fields.length < 2 || fields.length > 3) {
        throw new Malformed(n, "expected NAME SHA256HEX-OF-TOKEN [REPO,REPO...], found " + fields.length + " field(s)");
      }
      if (!NAME.matcher(fields[0]).matches()) {
        throw new Malformed(n, "the name must be letters, digits, '.', '_', '@' or '-' (at most 64)");
      }
      Integer before = names.putIfAbsent(fields[0], n);
      if (before != null) {
        throw new Malformed(n, "the same name as on line " + before);
      }
      if (!HEX.matcher(fields[1]).matches()) {
        throw new Malformed(n, "the second field must be the SHA-256 of the token, 64 hex digits"
            + " (e.g. printf %s \"$TOKEN\" | sha256sum)");
      }
      Optional<Set<String>> repos = Optional.empty();
      if (fields.length == 3) {
        Set<String> listed = new LinkedHashSet<>(Arrays.asList(fields[2].split(",", -1)));
        for (String repo : listed) {
          if (!knownRepos.contains(repo)) {
            throw new Malformed(n, repo.isEmpty() ? "empty repository name in the list"
                : "no repository called " + repo + " is configured");
          }
        }
        repos = Optional.of(listed);
      }
      tokens.add(new ClientToken(fields[0], HexFormat.of().parseHex(fields[1].toLowerCase(Locale.ROOT)), repos));
    }
    return tokens;
  }
}
