package dev.corral.http.auth;

import java.util.Optional;
import java.util.Set;

/**
 * Who may read a repository. Without a tokens file every repository is open. With one, every
 * repository needs a credential from it, except the anonymous ones: a token from the file
 * presented as {@code Bearer} or as the {@code Basic} password. A token limited to some
 * repositories that is presented for another gets {@link Forbidden} (403): it is a valid
 * credential, only not for this repository, and asking again with it cannot help.
 */
public final class ClientAuth {
  private final Optional<TokensFile> tokens;
  private final Set<String> anonymousRepos;

  public ClientAuth(Optional<TokensFile> tokens, Set<String> anonymousRepos) {
    this.tokens = tokens;
    this.anonymousRepos = Set.copyOf(anonymousRepos);
  }

  /** Every repository open to everyone: no tokens file. */
  public static ClientAuth open() {
    return new ClientAuth(Optional.empty(), Set.of());
  }

  /** Where the credentials come from; never their content. */
  @Override
  public String toString() {
    return tokens.map(t -> "tokens file " + t.file() + ", anonymous " + anonymousRepos).orElse("open");
  }

  /** Whether a tokens file is in force (then the admin endpoints other than health need the admin token). */
  public boolean required() {
    return tokens.isPresent();
  }

  /** What {@link #check} decided. */
  public sealed interface Verdict {
    /** May read; {@code who} is the credential's name, empty when none was needed. */
    record Allowed(Optional<String> who) implements Verdict {}

    /** No credential, or one that is not in the tokens file: 401. */
    record Unauthorized() implements Verdict {}

    /** A valid credential ({@code who}) that does not read this repository: 403. */
    record Forbidden(String who) implements Verdict {}
  }

  /**
   * Decides for a request to {@code repo} carrying {@code authorization} (the header's value).
   * Every token of the file is compared (in constant time each), so the time taken does not say
   * which one matched.
   */
  public Verdict check(String repo, Optional<String> authorization) {
    if (tokens.isEmpty() || anonymousRepos.contains(repo)) {
      Optional<String> who = tokens.isEmpty() ? Optional.empty() : find(authorization).map(ClientToken::name);
      return new Verdict.Allowed(who);
    }
    Optional<ClientToken> token = find(authorization);
    if (token.isEmpty()) {
      return new Verdict.Unauthorized();
    }
    return token.get().reads(repo) ? new Verdict.Allowed(Optional.of(token.get().name()))
        : new Verdict.Forbidden(token.get().name());
  }

  private Optional<ClientToken> find(Optional<String> authorization) {
    Optional<String> secret = PresentedSecret.bearerOrBasicPassword(authorization);
    if (secret.isEmpty()) {
      return Optional.empty();
    }
    byte[] presented = PresentedSecret.sha256(secret.get());
    ClientToken found = null;
    for (ClientToken t : tokens.get().tokens()) {
      if (t.matches(presented) && found == null) {
        found = t;
      }
    }
    return Optional.ofNullable(found);
  }
}
