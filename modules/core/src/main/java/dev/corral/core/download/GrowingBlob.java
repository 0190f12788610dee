package dev.corral.core.download;

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
import java.util.function.Supplier;
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

  private final long total;
  private final FileChannel channel;
  private final Executor io;
  private final Object lock = new Object();
  private long written;
  private boolean verified;
  private Throwable failure;
  private int readers = 1; // the writer's own reference, released by complete/fail
  private final List<CompletableFuture<Long>> parked = new ArrayList<>();
  private Supplier<Source<ByteString, NotUsed>> committed;
  /** A reader has followed the file at least once. */
  private boolean everRead;
  private Runnable onUnread;

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

  /**
   * The download completed and its bytes were verified and committed: release the last byte to
   * readers.
   *
   * @param committedBytes the committed bytes, for readers that start after the download's file
   *     was let go
   */
  public void complete(Supplier<Source<ByteString, NotUsed>> committedBytes) {
    List<CompletableFuture<Long>> wake;
    synchronized (lock) {
      if (verified || failure != null) {
        return;
      }
      committed = committedBytes;
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

  /**
   * Runs {@code action} (on the thread of the reader that let go) each time the last reader lets
   * go while the download still runs, and now if that has already happened: nobody reads the
   * body any more, neither a client of this node nor another node's copy (SEMANTICS C3: the
   * download is then an orphan). Not before a first reader came: waiters told to stream it are
   * still on their way.
   */
  public void whenUnread(Runnable action) {
    boolean now;
    synchronized (lock) {
      onUnread = action;
      now = unread();
    }
    if (now) {
      action.run();
    }
  }

  private boolean unread() {
    return everRead && readers == 1 && !verified && failure == null;
  }

  /**
   * One reader's stream of the whole body. A reader that starts after the download has ended and
   * every earlier reader let go of the file reads the committed bytes instead (or fails, when
   * nothing was committed).
   */
  public Source<ByteString, NotUsed> reader() {
    return reader(0);
  }

  /** One reader's stream of the body from {@code offset} (a peer resuming with a Range). */
  public Source<ByteString, NotUsed> reader(long offset) {
    return Source.lazySource(() -> {
          synchronized (lock) {
            if (readers > 0) {
              readers++;
              everRead = true;
              return follow(offset);
            }
            if (committed != null) {
              return offset == 0 ? committed.get() : skip(committed.get(), offset);
            }
          }
          return Source.<ByteString>failed(new IOException("the download failed"));
        })
        .mapMaterializedValue(m -> NotUsed.getInstance());
  }

  /** Follows the file as it grows; holds one reference on the shared channel until it ends. */
  private Source<ByteString, NotUsed> follow(long offset) {
    return Source.<Long, ByteString>unfoldAsync(offset, this::step)
        .watchTermination((mat, done) -> {
          done.whenComplete((d, e) -> release());
          return mat;
        });
  }

  private CompletionStage<Optional<Pair<Long, ByteString>>> step(long pos) {
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

  private static Source<ByteString, NotUsed> skip(Source<ByteString, NotUsed> bytes, long offset) {
    return bytes.statefulMapConcat(() -> {
      long[] left = {offset};
      return chunk -> {
        if (left[0] >= chunk.size()) {
          left[0] -= chunk.size();
          return List.of();
        }
        ByteString rest = chunk.drop((int) left[0]);
        left[0] = 0;
        return List.of(rest);
      };
    });
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
    Runnable unreadNow;
    synchronized (lock) {
      readers--;
      close = readers == 0;
      unreadNow = unread() ? onUnread : null;
    }
    if (unreadNow != null) {
      unreadNow.run();
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
  public int references() {
    synchronized (lock) {
      return readers;
    }
  }
}
