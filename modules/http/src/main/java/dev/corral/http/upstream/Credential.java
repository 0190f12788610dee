package dev.corral.http.upstream;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.function.Function;

/**
 * A repository's credential for its upstream, sent as {@code Authorization} only to the
 * repository's own origin (scheme, host and port of its base URL). The secret never appears in
 * {@link #toString()}, so it cannot leak into logs or exception messages.
 */
public sealed interface Credential {

  /** The value of the {@code Authorization} header. */
  String authorization();

  record Basic(String user, String password) implements Credential {
    public Basic {
      if (user == null || user.isEmpty() || user.contains(":")) {
        throw new IllegalArgumentException("basic credential needs a user name without ':'");
      }
      if (password == null) {
        throw new IllegalArgumentException("basic credential for user " + user + " has no password");
      }
    }

    @Override
    public String authorization() {
      String pair = user + ":" + password;
      return "Basic " + Base64.getEncoder().encodeToString(pair.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public String toString() {
      return "Basic[user=" + user + ", password=***]";
    }
  }

  record Bearer(String token) implements Credential {
    public Bearer {
      if (token == null || token.isBlank()) {
        throw new IllegalArgumentException("bearer credential has an empty token");
      }
    }

    @Override
    public String authorization() {
      return "Bearer " + token;
    }

    @Override
    public String toString() {
      return "Bearer[token=***]";
    }
  }

  /** The secret in environment variable {@code variable}; fails naming the variable when unset or empty. */
  static String secretFromEnv(String variable) {
    return secretFromEnv(variable, System::getenv);
  }

  /** As {@link #secretFromEnv(String)}, reading the environment through {@code env} (tests). */
  static String secretFromEnv(String variable, Function<String, String> env) {
    String value = env.apply(variable);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException(
          "upstream credential: environment variable " + variable + " is not set or empty");
    }
    return value;
  }

  /**
   * The secret in {@code file}, without its trailing line break; fails naming the file when it
   * is missing, unreadable or empty.
   */
  static String secretFromFile(Path file) {
    String value;
    try {
      value = Files.readString(file, StandardCharsets.UTF_8).strip();
    } catch (IOException e) {
      throw new IllegalArgumentException(
          "upstream credential: cannot read file " + file + " (" + e.getClass().getSimpleName() + ")", e);
    }
    if (value.isEmpty()) {
      throw new IllegalArgumentException("upstream credential: file " + file + " is empty");
    }
    return value;
  }
}
