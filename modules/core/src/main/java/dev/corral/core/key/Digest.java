package dev.corral.core.key;

import dev.corral.core.CborSerializable;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * An expected content digest: algorithm plus lower-case hex. Two spellings of one digest (hex in
 * upper or lower case) are one {@code Digest}, so they name one key (SEMANTICS K1).
 */
public record Digest(String algorithm, String hex) implements CborSerializable {

  /** Algorithms Corral can verify while bytes stream in, by their {@link java.security.MessageDigest} names. */
  public static final Set<String> ALGORITHMS = Set.of("sha1", "sha256", "sha512", "md5");

  public Digest {
    Objects.requireNonNull(algorithm, "algorithm");
    Objects.requireNonNull(hex, "hex");
    algorithm = algorithm.toLowerCase(Locale.ROOT).replace("-", "");
    hex = hex.toLowerCase(Locale.ROOT);
    if (!ALGORITHMS.contains(algorithm)) {
      throw new IllegalArgumentException("unsupported digest algorithm: " + algorithm);
    }
    if (hex.isEmpty() || !hex.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      throw new IllegalArgumentException("digest is not hex: " + hex);
    }
  }

  /** The JCA name of the algorithm, e.g. {@code SHA-256}. */
  public String jcaName() {
    return switch (algorithm) {
      case "sha1" -> "SHA-1";
      case "sha256" -> "SHA-256";
      case "sha512" -> "SHA-512";
      case "md5" -> "MD5";
      default -> throw new IllegalStateException(algorithm);
    };
  }

  @Override
  public String toString() {
    return algorithm + ":" + hex;
  }
}
