package dev.corral.registry;

import java.io.OutputStream;
import org.apache.pekko.util.ByteString;

/**
 * An output stream that collects into fixed-size chunks joined as one {@link ByteString} without
 * copying: a rewritten document of tens of MiB then costs its own size on the heap, not the
 * twice-over of a growing array and its final copy.
 */
final class ByteStringOutput extends OutputStream {
  private static final int CHUNK = 1024 * 1024;

  private ByteString done = ByteString.emptyByteString();
  private byte[] chunk;
  private int used;

  ByteStringOutput(long expected) {
    this.chunk = new byte[(int) Math.max(1024, Math.min(CHUNK, expected))];
  }

  @Override
  public void write(int b) {
    if (used == chunk.length) {
      flushChunk();
    }
    chunk[used++] = (byte) b;
  }

  @Override
  public void write(byte[] b, int off, int len) {
    while (len > 0) {
      if (used == chunk.length) {
        flushChunk();
      }
      int n = Math.min(len, chunk.length - used);
      System.arraycopy(b, off, chunk, used, n);
      used += n;
      off += n;
      len -= n;
    }
  }

  private void flushChunk() {
    done = done.concat(ByteString.fromArrayUnsafe(chunk, 0, used));
    chunk = new byte[CHUNK];
    used = 0;
  }

  /** What was written; the stream is not used after. */
  ByteString result() {
    ByteString out = used == 0 ? done : done.concat(ByteString.fromArrayUnsafe(chunk, 0, used));
    chunk = new byte[0];
    used = 0;
    return out;
  }
}
