package dev.corral.core.store;

import dev.corral.core.key.Sha256;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.util.ByteString;

/**
 * A {@link BlobWriter} to a temporary file under the store's {@code tmp/} directory. The store
 * that created it takes the file over in {@link DiskStore#commit}.
 */
final class DiskBlobWriter implements BlobWriter {

  private final DiskStore store;
  private final Path tempFile;
  private final FileChannel channel;
  private final MessageDigest sha256;
  private final MessageDigest extra;
  private final AtomicLong written = new AtomicLong();

  private boolean sealed;
  private String sha256Hex;
  private String extraHex;
  // Set by the store once the file has been moved away (or deduplicated); guarded by the store.
  private volatile boolean committed;
  private volatile boolean closed;

  DiskBlobWriter(DiskStore store, Path tempFile, String extraAlgorithm) throws IOException {
    this.store = store;
    this.tempFile = tempFile;
    try {
      this.sha256 = Sha256.digest();
      this.extra = extraAlgorithm == null ? null : MessageDigest.getInstance(extraAlgorithm);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalArgumentException("unknown digest algorithm: " + extraAlgorithm, e);
    }
    this.channel = FileChannel.open(tempFile,
        java.util.Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), OwnerOnly.file(tempFile));
  }

  @Override
  public void write(ByteString bytes) throws IOException {
    if (sealed || closed) {
      throw new IllegalStateException("blob already sealed or closed: " + tempFile);
    }
    // getByteBuffers() hands out read-only views of the ByteString's chunks: no copy.
    for (ByteBuffer buf : bytes.getByteBuffers()) {
      sha256.update(buf.duplicate());
      if (extra != null) {
        extra.update(buf.duplicate());
      }
      int n = buf.remaining();
      while (buf.hasRemaining()) {
        channel.write(buf);
      }
      // Only after the write returned: a reader following the download never reads past it.
      written.addAndGet(n);
    }
  }

  @Override
  public long written() {
    return written.get();
  }

  @Override
  public Path tempFile() {
    return tempFile;
  }

  @Override
  public void seal() {
    if (sealed) {
      return;
    }
    if (closed) {
      throw new IllegalStateException("blob closed before it was sealed: " + tempFile);
    }
    sha256Hex = HexFormat.of().formatHex(sha256.digest());
    extraHex = extra == null ? null : HexFormat.of().formatHex(extra.digest());
    sealed = true;
  }

  @Override
  public String sha256() {
    requireSealed();
    return sha256Hex;
  }

  @Override
  public String extraDigest() {
    requireSealed();
    return extraHex;
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      channel.close();
    } catch (IOException ignored) {
      // nothing useful to do: the file is deleted below
    }
    if (!committed) {
      try {
        Files.deleteIfExists(tempFile);
      } catch (IOException ignored) {
        // left for the next start-up's tmp sweep
      }
    }
  }

  boolean isCommitted() {
    return committed;
  }

  boolean isClosed() {
    return closed;
  }

  void markCommitted() {
    committed = true;
  }

  DiskStore store() {
    return store;
  }

  private void requireSealed() {
    if (!sealed) {
      throw new IllegalStateException("blob not sealed: " + tempFile);
    }
  }
}
