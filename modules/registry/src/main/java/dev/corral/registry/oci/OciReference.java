package dev.corral.registry.oci;

import dev.corral.core.key.Digest;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The grammar of the OCI Distribution API's names, checked before anything goes upstream: an
 * image name (path components of lower-case letters and digits joined by {@code .}, {@code _},
 * {@code __} or dashes; components joined by {@code /}; at most 255 characters), a tag, and a
 * digest Corral can verify ({@code sha256} with 64 hex digits, {@code sha512} with 128).
 */
final class OciReference {
  private OciReference() {}

  static final int MAX_NAME = 255;
  private static final Pattern COMPONENT = Pattern.compile("[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*");
  private static final Pattern TAG = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
  private static final Pattern DIGEST = Pattern.compile("(sha256:[0-9a-fA-F]{64}|sha512:[0-9a-fA-F]{128})");

  /** Whether the path components form a valid image name. */
  static boolean isName(List<String> components) {
    if (components.isEmpty()) {
      return false;
    }
    int length = components.size() - 1;
    for (String c : components) {
      if (!COMPONENT.matcher(c).matches()) {
        return false;
      }
      length += c.length();
    }
    return length <= MAX_NAME;
  }

  static boolean isTag(String reference) {
    return TAG.matcher(reference).matches();
  }

  /** Whether the reference has a digest's form ({@code algorithm:encoded}), valid or not. */
  static boolean looksLikeDigest(String reference) {
    return reference.indexOf(':') > 0;
  }

  /** The digest a reference names, when it is one Corral verifies. */
  static Optional<Digest> digest(String reference) {
    if (!DIGEST.matcher(reference).matches()) {
      return Optional.empty();
    }
    int colon = reference.indexOf(':');
    return Optional.of(new Digest(reference.substring(0, colon), reference.substring(colon + 1)));
  }
}
