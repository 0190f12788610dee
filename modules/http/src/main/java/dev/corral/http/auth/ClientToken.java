package dev.corral.http.auth;

import java.util.Optional;
import java.util.Set;

/**
 * One line of the tokens file: a credential's name (shown in logs, never the token), the SHA-256
 * of its token, and the repositories it reads (empty: every repository).
 */
public record ClientToken(String name, byte[] sha256, Optional<Set<String>> repos) {
  public ClientToken {
    sha256 = sha256.clone();
    repos = repos.map(Set::copyOf);
  }

  public boolean reads(String repo) {
    return repos.isEmpty() || repos.get().contains(repo);
  }

  /** Constant-time: both sides are 32 bytes. */
  boolean matches(byte[] presentedSha256) {
    return java.security.MessageDigest.isEqual(presentedSha256, sha256);
  }

  /** Without the hash. */
  @Override
  public String toString() {
    return "ClientToken[" + name + ", repos=" + repos.map(Object::toString).orElse("all") + "]";
  }
}
