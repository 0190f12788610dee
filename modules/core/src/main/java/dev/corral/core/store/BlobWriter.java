package dev.corral.core.store;

import java.io.IOException;
import java.nio.file.Path;
import org.apache.pekko.util.ByteString;

/**
 * A blob being written: bytes go to a temporary file in the store and through SHA-256 (and the
 * expected digest's algorithm, when one was asked for) as they arrive (SEMANTICS B1). Nothing
 * is visible to readers of the store until {@link ArtifactStore#commit}. Not thread-safe: one
 * writer, the fetch stream. {@link #written()} and {@link #tempFile()} may be read from other
 * threads to follow the download (a reader never reads past {@code written()}).
 */
public interface BlobWriter extends AutoCloseable {
  /** Appends bytes (hashing them). */
  void write(ByteString bytes) throws IOException;

  /** Bytes written so far; safe to read from any thread. */
  long written();

  /** The temporary file the bytes are going to, for readers that follow a download. */
  Path tempFile();

  /**
   * No more bytes: the digests are final, and the bytes can be verified before a commit. The
   * commit makes the file durable (fsync), not this. Idempotent.
   */
  void seal() throws IOException;

  /** Lower-case hex SHA-256 of everything written; valid after {@link #seal()}. */
  String sha256();

  /** Lower-case hex digest in the extra algorithm asked for, or null; valid after {@link #seal()}. */
  String extraDigest();

  /** Deletes the temporary file unless it was committed. Idempotent; never throws. */
  @Override
  void close();
}
