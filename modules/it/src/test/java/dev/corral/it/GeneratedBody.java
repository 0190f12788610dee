package dev.corral.it;

import java.io.IOException;
import java.io.OutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A deterministic body of any length, generated on the fly (SplitMix64) and never held in
 * memory: the upstream writes it, the test hashes the same stream for the expected digest.
 */
final class GeneratedBody {
  private static final int CHUNK = 256 * 1024;

  private final long seed;
  private final long length;

  GeneratedBody(long seed, long length) {
    this.seed = seed;
    this.length = length;
  }

  long length() {
    return length;
  }

  /** Writes the whole body to {@code out}. */
  void writeTo(OutputStream out) throws IOException {
    Generator g = new Generator(seed);
    byte[] buf = new byte[CHUNK];
    for (long left = length; left > 0; ) {
      int n = (int) Math.min(buf.length, left);
      g.fill(buf, n);
      out.write(buf, 0, n);
      left -= n;
    }
  }

  /** SHA-256 of the whole body, as lower-case hex. */
  String sha256() {
    MessageDigest md = newSha256();
    Generator g = new Generator(seed);
    byte[] buf = new byte[CHUNK];
    for (long left = length; left > 0; ) {
      int n = (int) Math.min(buf.length, left);
      g.fill(buf, n);
      md.update(buf, 0, n);
      left -= n;
    }
    return HexFormat.of().formatHex(md.digest());
  }

  static MessageDigest newSha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** SplitMix64; chunks are multiples of 8 bytes except the last, so the stream does not depend on chunking. */
  private static final class Generator {
    private long state;

    Generator(long seed) {
      this.state = seed;
    }

    void fill(byte[] buf, int n) {
      for (int i = 0; i < n; i += 8) {
        long z = (state += 0x9E3779B97F4A7C15L);
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        for (int j = 0; j < 8 && i + j < n; j++) {
          buf[i + j] = (byte) (z >>> (8 * j));
        }
      }
    }
  }
  /** What a client read of a (large) response body: its length and SHA-256, hashed as it streamed. */
  record Received(long bytes, String sha256) {}

  /** Reads a response body to its end in bounded memory, hashing it. */
  static Received read(java.net.http.HttpResponse<java.io.InputStream> response) {
    MessageDigest md = newSha256();
    byte[] buf = new byte[256 * 1024];
    long total = 0;
    try (java.io.InputStream in = response.body()) {
      for (int n; (n = in.read(buf)) >= 0; ) {
        md.update(buf, 0, n);
        total += n;
      }
    } catch (IOException e) {
      throw new AssertionError("transfer failed after " + total + " bytes", e);
    }
    return new Received(total, HexFormat.of().formatHex(md.digest()));
  }

  /** Deletes a directory tree (a node's data dir holding gibibytes), if it exists. */
  static void deleteTree(java.nio.file.Path root) throws IOException {
    if (!java.nio.file.Files.exists(root)) {
      return;
    }
    java.nio.file.Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<>() {
      @Override
      public java.nio.file.FileVisitResult visitFile(java.nio.file.Path file,
          java.nio.file.attribute.BasicFileAttributes attrs) throws IOException {
        java.nio.file.Files.delete(file);
        return java.nio.file.FileVisitResult.CONTINUE;
      }

      @Override
      public java.nio.file.FileVisitResult postVisitDirectory(java.nio.file.Path dir, IOException e)
          throws IOException {
        java.nio.file.Files.delete(dir);
        return java.nio.file.FileVisitResult.CONTINUE;
      }
    });
  }
}
