package dev.corral.core.fetch;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * A large body that is still downloading, readable by any number of waiters while it grows
 * (SEMANTICS B2, B3). Each reader gets its own stream over one shared read channel on the
 * download's temporary file; a reader that has caught up waits for the next write, woken by the
 * writer (no polling).
 *
 * <p>The last byte is held back until the download is complete and verified: if it fails, or its
 * digest does not match, every reader's stream fails and its connection is aborted, so a client
 * never receives a body that looks complete but is not.
 */
public final class GrowingBlob {
  private static final int CHUNK = 64 * 1024;

  /**
   * A reader started after the download was over (its channel closed): it read nothing. The
   * bytes are then committed to the store if the download succeeded.
   */
  public static final class Closed extends IOException {
    Closed() {
      super("download already closed");
    }
  }

  private final long total;
  private final FileChannel channel;
  private final Executor io;
  private final Object lock = new Object();
  private long written;
  private boolean verified;
  private Throwable failure;
  private int readers = 1; // the writer's own reference, released by complete/fail
  private final List<CompletableFuture<Long>> parked = new ArrayList<>();

  /**
   * @param file the download's temporary file (still readable after it is renamed into place)
   * @param total the exact body length (the upstream's Content-Length)
   * @param io where blocking file reads run
   */
  public GrowingBlob(Path file, long total, Executor io) throws IOException {
    this.total = total;
    this.channel = FileChannel.open(file, StandardOpenOption.READ);
    this.io = io;
  }

  public long total() {
    return total;
  }

  /** The writer appended bytes; {@code writtenSoFar} is the new file length. */
  public void advance(long writtenSoFar) {
    List<CompletableFuture<Long>> wake;
    long limit;
    synchronized (lock) {
      written = writtenSoFar;
      limit = readableLimit();
      wake = takeParked();
    }
    wake.forEach(f -> f.complete(limit));
  }

  /** The download completed and its bytes were verified: release the last byte to readers. */
  public void complete() {
    List<CompletableFuture<Long>> wake;
    synchronized (lock) {
      if (verified || failure != null) {
        return;
      }
      written = total;
      verified = true;
      wake = takeParked();
    }
    wake.forEach(f -> f.complete(total));
    release();
  }

  /** The download failed or did not verify: every reader's stream fails. */
  public void fail(Throwable cause) {
    List<CompletableFuture<Long>> wake;
    synchronized (lock) {
      if (verified || failure != null) {
        return;
      }
      failure = cause;
      wake = takeParked();
    }
    wake.forEach(f -> f.completeExceptionally(cause));
    release();
  }

  /** One reader's stream of the whole body. */
  public Source<ByteString, NotUsed> reader() {
    return Source.<Long, ByteString>unfoldAsync(-1L, this::step)
        .watchTermination((mat, done) -> {
          done.whenComplete((d, e) -> release());
          return mat;
        })
        .mapMaterializedValue(m -> NotUsed.getInstance());
  }

  /** Position -1 is the reader's start: it takes a reference on the shared channel once. */
  private CompletionStage<Optional<Pair<Long, ByteString>>> step(long pos) {
    if (pos < 0) {
      synchronized (lock) {
        if (readers == 0) {
          return CompletableFuture.failedFuture(new Closed());
        }
        readers++;
      }
      return CompletableFuture.completedFuture(Optional.of(Pair.create(0L, ByteString.emptyByteString())));
    }
    if (pos >= total) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return readable(pos).thenApplyAsync(limit -> {
      int n = (int) Math.min(CHUNK, limit - pos);
      ByteBuffer buf = ByteBuffer.allocate(n);
      try {
        while (buf.hasRemaining()) {
          int r = channel.read(buf, pos + buf.position());
          if (r < 0) {
            throw new IOException("download file shorter than announced");
          }
        }
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
      buf.flip();
      return Optional.of(Pair.create(pos + n, ByteString.fromByteBuffer(buf)));
    }, io);
  }

  /** Completes with a readable limit beyond {@code pos}, parking the reader until there is one. */
  private CompletionStage<Long> readable(long pos) {
    synchronized (lock) {
      if (failure != null) {
        return CompletableFuture.failedFuture(failure);
      }
      long limit = readableLimit();
      if (limit > pos) {
        return CompletableFuture.completedFuture(limit);
      }
      CompletableFuture<Long> f = new CompletableFuture<>();
      parked.add(f);
      return f.thenCompose(l -> readable(pos));
    }
  }

  private long readableLimit() {
    return verified ? total : Math.min(written, total - 1);
  }

  private List<CompletableFuture<Long>> takeParked() {
    List<CompletableFuture<Long>> wake = new ArrayList<>(parked);
    parked.clear();
    return wake;
  }

  private void release() {
    boolean close;
    synchronized (lock) {
      readers--;
      close = readers == 0;
    }
    if (close) {
      try {
        channel.close();
      } catch (IOException ignored) {
        // nothing left to read from it
      }
    }
  }

  /** Readers still holding the channel (the writer counts as one until it finishes). For tests. */
  int references() {
    synchronized (lock) {
      return readers;
    }
  }
}
