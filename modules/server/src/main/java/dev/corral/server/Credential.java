package dev.corral.server;

import java.util.Objects;

/**
 * A secret sent to a repository's upstream, read at start-up from an environment variable or a
 * file (never written in the configuration itself). {@link #toString()} never shows the secret.
 */
public sealed interface Credential permits Credential.Basic, Credential.Bearer {

  /** HTTP basic authentication. */
  record Basic(String username, String password) implements Credential {
    public Basic {
      Objects.requireNonNull(username, "username");
      Objects.requireNonNull(password, "password");
    }

    @Override
    public String toString() {
      return "Basic[username=" + username + ", password=***]";
    }
  }

  /** An {@code Authorization: Bearer} token. */
  record Bearer(String token) implements Credential {
    public Bearer {
      Objects.requireNonNull(token, "token");
    }

    @Override
    public String toString() {
      return "Bearer[token=***]";
    }
  }
}
