package dev.corral.http.auth;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.Locale;
import java.util.Optional;

/**
 * The secret a client presents in its {@code Authorization} header: a {@code Bearer} token
 * (npm's {@code _authToken}, OCI clients, the admin API), or the password of HTTP {@code Basic}
 * with any user name (pip, Maven, go's {@code .netrc}, yarn, pnpm). Secrets are compared by
 * {@link #matches} only, in constant time.
 */
public final class PresentedSecret {
  private PresentedSecret() {}

  /** The bearer token, when the header is {@code Bearer <token>} (scheme in any case). */
  public static Optional<String> bearer(Optional<String> authorization) {
    return authorization.flatMap(a -> scheme(a, "bearer")).map(String::trim).filter(t -> !t.isEmpty());
  }

  /** The bearer token, or the password of {@code Basic base64(user:password)}. */
  public static Optional<String> bearerOrBasicPassword(Optional<String> authorization) {
    return bearer(authorization).or(() -> authorization.flatMap(a -> scheme(a, "basic")).flatMap(PresentedSecret::basicPassword));
  }

  /** Whether {@code presented} equals {@code expected}, without a timing side channel on either's content. */
  public static boolean matches(String presented, String expected) {
    return matchesSha256(presented, sha256(expected));
  }

  /**
   * Whether the SHA-256 of {@code presented} is {@code expectedSha256}. Both sides are 32 bytes,
   * so the comparison's time says nothing about the secret's length or content.
   */
  public static boolean matchesSha256(String presented, byte[] expectedSha256) {
    return MessageDigest.isEqual(sha256(presented), expectedSha256);
  }

  static byte[] sha256(String text) {
    return sha256(text.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] sha256(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static Optional<String> scheme(String header, String scheme) {
    String h = header.trim();
    int space = h.indexOf(' ');
    if (space < 0 || !h.substring(0, space).toLowerCase(Locale.ROOT).equals(scheme)) {
      return Optional.empty();
    }
    return Optional.of(h.substring(space + 1).trim());
  }

  private static Optional<String> basicPassword(String encoded) {
    try {
      String pair = new String(Base64.getDecoder().decode(encoded), StandardCharsets.UTF_8);
      int colon = pair.indexOf(':');
      return colon < 0 ? Optional.empty() : Optional.of(pair.substring(colon + 1)).filter(p -> !p.isEmpty());
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
