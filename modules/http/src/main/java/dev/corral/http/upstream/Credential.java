package dev.corral.http.upstream;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * A repository's credential for its upstream, sent as {@code Authorization} only to the
 * repository's own origin (scheme, host and port of its base URL), and, with the registry token
 * flow, to the token realm its own origin names when {@link UpstreamScope#admitRealm} allows it
 * (inside the base, or on {@code allowed-hosts}). The secret never appears in
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
}
