package dev.corral.core.key;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import org.apache.pekko.util.ByteString;

/** SHA-256, the name of every blob and key id: lower-case hex, as stored and compared. */
public final class Sha256 {
  private Sha256() {}

  /**
   * Cloned for each digest: {@code getInstance} looks the algorithm up among the providers every
   * time, which cost more than hashing a key (a key id is made on every request).
   */
  private static final MessageDigest PROTOTYPE = newDigest();

  /** A fresh digest (every JVM has SHA-256). */
  public static MessageDigest digest() {
    try {
      return (MessageDigest) PROTOTYPE.clone();
    } catch (CloneNotSupportedException e) {
      return newDigest(); // a provider whose digest cannot be cloned
    }
  }

  private static MessageDigest newDigest() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  public static String hex(byte[] bytes) {
    return HexFormat.of().formatHex(digest().digest(bytes));
  }

  public static String hex(ByteString bytes) {
    MessageDigest md = digest();
    for (ByteBuffer b : bytes.getByteBuffers()) {
      md.update(b);
    }
    return HexFormat.of().formatHex(md.digest());
  }
}
