package dev.corral.http;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.zip.GZIPOutputStream;
import org.apache.pekko.util.ByteString;

/**
 * The gzip form of a metadata body, and its entity tag. The encoding is deterministic (no file
 * name, modification time 0, default level): one identity body always gives the same bytes, so
 * its ETag can be derived from the identity form's without reading them.
 */
final class GzipForm {
  private GzipForm() {}

  static ByteString encode(ByteString identity) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(Math.max(64, identity.length() / 4));
    try (GZIPOutputStream gz = new GZIPOutputStream(out, 64 * 1024)) {
      for (ByteBuffer b : identity.getByteBuffers()) {
        byte[] chunk = new byte[b.remaining()];
        b.get(chunk);
        gz.write(chunk);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array stream does not fail
    }
    return ByteString.fromArrayUnsafe(out.toByteArray());
  }

  /**
   * The gzip form's ETag: the identity ETag with {@code -gzip} inside its quotes, weak if it is;
   * without an identity ETag, one made from the identity bytes' digest. A client's
   * {@code If-None-Match} thus matches one form only.
   *
   * @param identity the identity form's ETag, or null
   * @param digest hex naming the identity bytes (their SHA-256)
   */
  static String etag(String identity, String digest) {
    EntityTag tag = EntityTag.parse(identity);
    if (tag == null) {
      return "\"" + digest.substring(0, Math.min(32, digest.length())) + "-gzip\"";
    }
    return (tag.weak() ? "W/" : "") + "\"" + tag.opaque() + "-gzip\"";
  }
}
