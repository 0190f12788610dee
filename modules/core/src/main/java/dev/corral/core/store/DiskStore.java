package dev.corral.core.store;

import dev.corral.core.key.Sha256;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.regex.Pattern;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@link ArtifactStore} on local disk. Layout under the data directory:
 *
 * <pre>
 *   blobs/ab/&lt;sha256 hex&gt;     content-addressed bytes (fan-out by the first two hex chars)
 *   keys/ab/&lt;key id&gt;.json     one {@link StoredArtifact} per key, as JSON
 *   tmp/                       blobs, key records and the index snapshot being written
 *   index.snapshot             the whole index as a clean {@link #close} left it ({@link IndexSnapshot});
 *                              present only between a clean close and the next open
 * </pre>
 *
 * <p>Every file is written under {@code tmp/}, fsynced and renamed into place atomically, so a
 * crash leaves either the old file or the new one, never half a file. A commit is the exception
 * in one respect: its blob is renamed into place and the key entered in the index at once, so the
 * artifact is served from the moment the commit returns, and the blob's fsync and the key record
 * (written, fsynced, renamed into place) follow, on the store's sync threads when it has them
 * ({@link #open(Path, long, Clock, Executor, Executor)}). The key record is what makes the artifact
 * outlive a crash, and it is placed only after its blob is on disk: a crash before that finds a
 * blob that no key refers to, which the rebuild deletes. The fsyncs are most of a small commit's
 * time (a third of a small miss's), and no waiter needs them: they make a commit survive a crash
 * of the machine, which before them loses the commit as it would lose one a moment earlier. A
 * clean {@link #close} waits for them.
 *
 * <p>Start-up: the open claims the index snapshot when one is there (moves it into {@code tmp/},
 * durably, before the store takes any change, so a snapshot is only ever trusted by the one open
 * that follows the close that wrote it) and loads the index from it (no key record is read, no
 * blob looked at). Without one (after a crash, or when it is damaged: logged) the index is rebuilt
 * from the key records, dropping those whose blob is missing or has the wrong size and deleting
 * blobs no key refers to, so an interrupted commit is simply not there. (Directories are not
 * fsynced after a commit's rename: a crash may lose the last commits, which the rebuild then
 * treats as never made.) Either way a blob is checked again when it is read (F2).
 *
 * <p>The index may load in the background ({@link #DiskStore(Path, long, Clock, Executor)}), as
 * nginx's cache loader does: the store is usable at once. Until the index is loaded, a key not yet
 * in it is looked up in its own record on disk (and added), a removal reaches keys not loaded yet,
 * and what changes meanwhile is remembered ({@link Loading}) so that the loaded index never brings
 * back a key removed or replaced in the meantime; eviction, the cleanup of unused keys and the
 * deletion of a blob whose last loaded key went wait for the load, and listings wait for it.
 *
 * <p>The index holds every key in exact least-recently-used order. Size is bounded by evicting
 * from the LRU end after each commit; a blob shared by several keys (identical content) is
 * stored and counted once and deleted when its last key goes. The order survives a clean
 * restart (the snapshot keeps it); a rebuild takes the oldest fetch as the least recently used.
 */
public final class DiskStore implements ArtifactStore {

  private static final Logger log = LoggerFactory.getLogger(DiskStore.class);
  private static final int CHUNK = 64 * 1024;
  private static final Pattern HEX64 = Pattern.compile("[0-9a-f]{64}");

  private final Path blobsDir;
  private final Path keysDir;
  private final Path tmpDir;
  private final Path snapshotFile;
  private final long maxSizeBytes;
  private final Clock clock;
  private final ObjectMapper json =
      new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

  /*
   * One lock guards the index, the blob reference counts and every rename in blobs/ and keys/,
   * so a blob is never deleted between a commit finding it and referring to it. Hashing, fsyncs,
   * reads and deletions happen outside it (K2): a file that goes is renamed into tmp/ under the
   * lock (a cheap rename in one directory tree) and deleted after the lock is released, so a
   * slow deletion of a large blob never holds up another key's lookup or commit.
   *
   * Not Caffeine: its W-TinyLFU admission may refuse a key that was just fetched (a one-hit
   * newcomer loses to frequent residents), and a fetch just committed must be a hit (F3).
   * KeyIndex gives exact LRU in a few arrays rather than objects per key (a million keys).
   */
  private final ReentrantLock lock = new ReentrantLock();
  // Both replaced once, when the index is loaded, by the loaded tables with what came meanwhile.
  private KeyIndex index = new KeyIndex(64);
  private BlobCounts blobs = new BlobCounts(64);
  /** Told the id of each key evicted to make room (outside the lock); for the replica directory. */
  private volatile java.util.function.Consumer<String> onEvicted = keyId -> {};
  /** Keys this store stopped holding by itself, by {@link Eviction} ordinal (metrics). */
  private final java.util.concurrent.atomic.AtomicLongArray evictions =
      new java.util.concurrent.atomic.AtomicLongArray(Eviction.values().length);
  /** Deletes a file renamed into tmp/ under the lock; called outside it. Replaced by tests. */
  private volatile Deletion deletion = Files::deleteIfExists;
  private long totalSize;
  /** One copy of the header names, values and lists many keys have alike. */
  private final SharedHeaders sharedHeaders = new SharedHeaders();
  /** A snapshot written by {@link #close} is on disk and matches the index; guarded by the lock. */
  private boolean snapshotWritten;
  /** What changed while the index loads; null once it is loaded. Guarded by the lock. */
  private Loading loading = new Loading();
  /** Counted down when the index load ends, loaded or failed. */
  private final CountDownLatch loadEnded = new CountDownLatch(1);
  /** Why the index load failed, or null. */
  private volatile Throwable loadFailure;
  /** Closed while the index was loading: the load stops before it changes anything. Guarded by the lock. */
  private boolean loadAbandoned;
  /** How this store's index was loaded (valid once loaded). */
  private volatile boolean openedFromSnapshot;
  /** Makes commits durable after they return (see the class comment); null: before. */
  private final Executor syncer;
  /** Guards {@link #syncing} and {@link #closing}; notified when a sync ends. */
  private final Object syncs = new Object();
  /** Commits handed to {@link #syncer} and not durable yet. */
  private int syncing;
  /** {@link #close} began: later commits make themselves durable before they return. */
  private boolean closing;

  /** Thrown inside the load when the store was closed meanwhile. */
  private static final class Abandoned extends RuntimeException {
    Abandoned() {
      super(null, null, false, false);
    }
  }

  /**
   * What changed while the index loads in the background, for the load's merge: the loaded index
   * is older than any of it.
   */
  private static final class Loading {
    /** Keys removed or dropped meanwhile: the loaded index must not bring them back. */
    final Set<String> dropped = new HashSet<>();
    /**
     * Blobs whose last key known so far went meanwhile: deleted once loaded unless a loaded key
     * still refers to them (a blob is shared by every key of the same content).
     */
    final Set<String> unreferenced = new HashSet<>();
    /** Blobs found bad and deleted meanwhile: loaded keys that refer to them are dropped too. */
    final Set<String> bad = new HashSet<>();
  }

  /** Deletes one file that is no longer wanted. */
  @FunctionalInterface
  interface Deletion {
    void delete(Path file) throws IOException;
  }

  /** Why this store stopped holding a key by itself (a purge's {@link #remove} is not one). */
  public enum Eviction {
    /** Least recently used, to bring the store back under its maximum size. */
    SIZE("size"),
    /** Its blob was found missing, of the wrong size or corrupt (F2). */
    DAMAGED("damaged"),
    /** Not used for longer than its repository's {@code max-age-unused}. */
    UNUSED("unused");

    private final String label;

    Eviction(String label) {
      this.label = label;
    }

    /** The metric label. */
    public String label() {
      return label;
    }
  }

  /**
   * Opens the store in {@code dataDir} (created if absent), deletes leftover temporary files and
   * loads the index from the snapshot a clean {@link #close} left, or else rebuilds it from the key
   * records on disk, checking each blob's size (not its hash); returns once the index is loaded.
   *
   * @param maxSizeBytes the total blob size above which least recently used keys are evicted
   * @param clock the source of {@link StoredArtifact#fetchedAtMillis()} on commit
   */
  public DiskStore(Path dataDir, long maxSizeBytes, Clock clock) throws IOException {
    this(dataDir, maxSizeBytes, clock, Runnable::run);
  }

  /**
   * The same, loading the index on {@code indexLoader}: the store is usable as soon as this
   * returns, the index loaded or not (see the class comment). A load that fails is logged; the
   * store then goes on looking keys up on disk and evicts nothing until it is opened again. When
   * {@code indexLoader} runs the load on the calling thread, its failure is thrown here.
   */
  public DiskStore(Path dataDir, long maxSizeBytes, Clock clock, Executor indexLoader) throws IOException {
    this(dataDir, maxSizeBytes, clock, indexLoader, null);
  }

  /**
   * The same, making each commit durable on {@code syncer} after the commit returns (see the class
   * comment; {@link #syncThreads}); null: before it returns.
   */
  public DiskStore(Path dataDir, long maxSizeBytes, Clock clock, Executor indexLoader, Executor syncer)
      throws IOException {
    this.syncer = syncer;
    if (maxSizeBytes < 0) {
      throw new IllegalArgumentException("maxSizeBytes < 0: " + maxSizeBytes);
    }
    this.blobsDir = dataDir.resolve("blobs");
    this.keysDir = dataDir.resolve("keys");
    this.tmpDir = dataDir.resolve("tmp");
    this.snapshotFile = dataDir.resolve(IndexSnapshot.FILE_NAME);
    this.maxSizeBytes = maxSizeBytes;
    this.clock = Objects.requireNonNull(clock, "clock");
    for (Path dir : List.of(blobsDir, keysDir, tmpDir)) {
      OwnerOnly.createDirectories(dir);
      OwnerOnly.tighten(dir);
    }
    OwnerOnly.tighten(dataDir);
    int tmpDeleted = deleteChildren(tmpDir);
    Path claimed = claimSnapshot();
    Thread opening = Thread.currentThread();
    java.util.concurrent.atomic.AtomicBoolean here = new java.util.concurrent.atomic.AtomicBoolean();
    indexLoader.execute(() -> {
      here.set(Thread.currentThread() == opening);
      load(claimed, tmpDeleted);
    });
    if (here.get() && loadFailure != null) { // loaded on this thread, and failed
      throw loadFailure instanceof IOException io ? io : new IOException(loadFailure);
    }
  }

  /** Same as the constructor that loads the index before it returns. */
  public static DiskStore open(Path dataDir, long maxSizeBytes, Clock clock) throws IOException {
    return new DiskStore(dataDir, maxSizeBytes, clock);
  }

  /** Same as the constructor that loads the index on {@code indexLoader}. */
  public static DiskStore open(Path dataDir, long maxSizeBytes, Clock clock, Executor indexLoader)
      throws IOException {
    return new DiskStore(dataDir, maxSizeBytes, clock, indexLoader);
  }

  /** Same as the constructor that makes commits durable on {@code syncer}. */
  public static DiskStore open(Path dataDir, long maxSizeBytes, Clock clock, Executor indexLoader,
      Executor syncer) throws IOException {
    return new DiskStore(dataDir, maxSizeBytes, clock, indexLoader, syncer);
  }

  /** How long a {@link #close} waits for the commits still being made durable. */
  static final java.time.Duration CLOSE_SYNC_WAIT = java.time.Duration.ofSeconds(60);

  /** The most commits that wait for a {@link #syncThreads} thread; past it a commit syncs on its own thread. */
  static final int SYNC_QUEUE = 1024;

  /**
   * {@code threads} daemon threads to make commits durable on: the fsyncs of that many commits at
   * a time, whose waits the file system's journal shares. With {@link #SYNC_QUEUE} commits waiting
   * for them, the next commit makes itself durable before it returns (the commits slow down).
   */
  public static Executor syncThreads(int threads) {
    java.util.concurrent.atomic.AtomicInteger n = new java.util.concurrent.atomic.AtomicInteger();
    ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
        new java.util.concurrent.ArrayBlockingQueue<>(SYNC_QUEUE), r -> {
          Thread t = new Thread(r, "corral-store-sync-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        }, new ThreadPoolExecutor.CallerRunsPolicy());
    pool.allowCoreThreadTimeOut(true);
    return pool;
  }

  /** Whether the index is still loading (or its load failed): see the class comment. */
  @Override
  public boolean indexLoading() {
    lock.lock();
    try {
      return loading != null;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // ArtifactStore

  /**
   * Sets who is told the ids of the keys this store stopped holding by itself: evicted to make
   * room after a commit, or dropped because their blob turned out missing, of the wrong size or
   * corrupt (F2), so that the cluster's record of who holds a key's bytes drops this node. Not told
   * of {@link #remove} (a purge, which clears the record itself). Called outside the store's lock;
   * must not block.
   */
  public void onEvicted(java.util.function.Consumer<String> listener) {
    onEvicted = listener;
  }

  @Override
  public java.util.OptionalLong blobSize(String sha256) {
    boolean stillLoading;
    lock.lock();
    try {
      long size = blobs.sizeOf(sha256);
      if (size >= 0) {
        return java.util.OptionalLong.of(size);
      }
      stillLoading = loading != null;
    } finally {
      lock.unlock();
    }
    if (stillLoading && HEX64.matcher(sha256).matches()) {
      // Maybe a key not loaded yet refers to it; whoever reads it verifies it whole.
      long size = sizeOrMinusOne(blobPath(sha256));
      return size >= 0 ? java.util.OptionalLong.of(size) : java.util.OptionalLong.empty();
    }
    return java.util.OptionalLong.empty();
  }

  @Override
  public Optional<StoredArtifact> indexed(ArtifactKey key) {
    String canonical = key.canonical();
    String keyId = ArtifactKey.idOf(canonical);
    lock.lock();
    try {
      return Optional.ofNullable(used(keyId, canonical)); // access order: marks it recently used
    } finally {
      lock.unlock();
    }
  }

  @Override
  public Optional<StoredArtifact> lookup(ArtifactKey key) {
    String canonical = key.canonical();
    String keyId = ArtifactKey.idOf(canonical);
    StoredArtifact found;
    boolean stillLoading;
    lock.lock();
    try {
      found = used(keyId, canonical); // access order: marks it recently used
      stillLoading = loading != null;
    } finally {
      lock.unlock();
    }
    if (found == null) {
      return stillLoading ? Optional.ofNullable(onDisk(keyId, canonical)) : Optional.empty();
    }
    if (blobIntact(found)) {
      return Optional.of(found);
    }
    log.warn("blob {} of key {} is missing or has the wrong size; dropping the key",
        found.sha256(), found.key().strip().replace('\n', ' '));
    List<Path> doomed = new ArrayList<>();
    boolean dropped = false;
    lock.lock();
    try {
      if (found.equals(artifact(keyId))) {
        dropped = dropKey(keyId, doomed);
      }
    } catch (IOException e) {
      log.warn("could not delete the files of key {}: {}", keyId, e.toString());
    } finally {
      lock.unlock();
      delete(doomed);
    }
    if (dropped) {
      evictions.incrementAndGet(Eviction.DAMAGED.ordinal());
      tellEvicted(List.of(keyId)); // a bad copy leaves the replica directory as an evicted one does
    }
    return Optional.empty();
  }

  @Override
  public BlobWriter newBlob(String extraAlgorithm) throws IOException {
    return new DiskBlobWriter(this, tmpDir.resolve(UUID.randomUUID() + ".blob"), extraAlgorithm);
  }

  @Override
  public StoredArtifact commit(ArtifactKey key, BlobWriter blob, List<Header> headers, long fetchedAtMillis)
      throws IOException {
    if (!(blob instanceof DiskBlobWriter writer) || writer.store() != this) {
      throw new IllegalArgumentException("blob was not created by this store");
    }
    if (writer.isCommitted()) {
      throw new IllegalStateException("blob already committed: " + writer.tempFile());
    }
    if (writer.isClosed()) {
      throw new IllegalStateException("blob closed before commit: " + writer.tempFile());
    }
    writer.seal();
    String keyId = key.id();
    StoredArtifact artifact =
        new StoredArtifact(
            keyId, key.canonical(), writer.sha256(), writer.written(), sharedHeaders.share(headers),
            fetchedAtMillis >= 0 ? fetchedAtMillis : clock.millis());
    Path blobPath = blobPath(artifact.sha256());
    OwnerOnly.createDirectories(blobPath.getParent());
    // Here, not in the sync: a revalidation's touch may place the key's record before it runs.
    OwnerOnly.createDirectories(recordPath(keyId).getParent());
    List<String> evicted = List.of();
    List<Path> doomed = new ArrayList<>();
    lock.lock();
    try {
      forgetSnapshot();
      placeBlob(writer, blobPath, artifact.size(), doomed);
      StoredArtifact previous = index.put(artifact, clock.millis());
      addRef(artifact);
      if (previous != null) {
        release(previous, doomed);
      }
      evicted = evict(keyId, doomed);
    } finally {
      lock.unlock();
      writer.close();
      delete(doomed);
    }
    tellEvicted(evicted);
    boolean later;
    synchronized (syncs) {
      later = syncer != null && !closing;
      if (later) {
        syncing++;
      }
    }
    if (!later) {
      durable(artifact);
      return artifact;
    }
    try {
      syncer.execute(() -> {
        try {
          durable(artifact);
        } catch (IOException | RuntimeException e) {
          log.warn("the commit of {} could not be made durable, and was undone: {}",
              artifact.key().strip().replace('\n', ' '), e.toString());
        } finally {
          synced();
        }
      });
    } catch (java.util.concurrent.RejectedExecutionException e) {
      synced();
      durable(artifact);
    }
    return artifact;
  }

  private void synced() {
    synchronized (syncs) {
      syncing--;
      syncs.notifyAll();
    }
  }

  /**
   * The second half of a commit (see the class comment): fsyncs the blob, then writes, fsyncs and
   * renames the key record into place, unless the key changed or went meanwhile. A failure undoes
   * the commit: the key leaves the index (it would not survive a restart) and is thrown.
   */
  private void durable(StoredArtifact artifact) throws IOException {
    try {
      try (FileChannel blob = FileChannel.open(blobPath(artifact.sha256()), StandardOpenOption.READ)) {
        blob.force(true);
      } catch (NoSuchFileException e) {
        if (current(artifact)) {
          throw e;
        }
        return; // removed meanwhile (a purge, an eviction)
      }
      Path recordTemp = writeRecordTemp(artifact);
      boolean placed = false;
      lock.lock();
      try {
        if (artifact.equals(artifact(artifact.keyId()))) {
          moveAtomically(recordTemp, recordPath(artifact.keyId()));
          placed = true;
        }
      } finally {
        lock.unlock();
        if (!placed) { // placed, it is gone from tmp/ (the call cost a failed unlink per commit)
          Files.deleteIfExists(recordTemp);
        }
      }
    } catch (IOException e) {
      undo(artifact);
      throw e;
    }
  }

  /** Whether the index still holds {@code artifact} for its key. */
  private boolean current(StoredArtifact artifact) {
    lock.lock();
    try {
      return artifact.equals(artifact(artifact.keyId()));
    } finally {
      lock.unlock();
    }
  }

  /** A commit that could not be made durable leaves the index, unless the key changed meanwhile. */
  private void undo(StoredArtifact artifact) {
    List<Path> doomed = new ArrayList<>();
    lock.lock();
    try {
      if (artifact.equals(artifact(artifact.keyId()))) {
        dropKey(artifact.keyId(), doomed);
      }
    } catch (IOException e) {
      log.warn("could not delete the files of key {}: {}", artifact.keyId(), e.toString());
    } finally {
      lock.unlock();
      delete(doomed);
    }
  }

  /** Tells the eviction listener, outside the lock, of keys this node no longer holds. */
  private void tellEvicted(List<String> keyIds) {
    for (String gone : keyIds) {
      try {
        onEvicted.accept(gone);
      } catch (RuntimeException e) {
        log.warn("eviction listener failed for {}: {}", gone, e.toString());
      }
    }
  }

  @Override
  public Optional<StoredArtifact> touch(ArtifactKey key, List<Header> headers, long fetchedAtMillis)
      throws IOException {
    String keyId = key.id();
    StoredArtifact current;
    lock.lock();
    try {
      current = artifact(keyId);
    } finally {
      lock.unlock();
    }
    if (current == null) {
      return Optional.empty();
    }
    StoredArtifact touched =
        new StoredArtifact(
            keyId, current.key(), current.sha256(), current.size(), sharedHeaders.share(headers),
            fetchedAtMillis);
    Path recordTemp = writeRecordTemp(touched);
    boolean recordPlaced = false;
    lock.lock();
    try {
      // A concurrent commit or removal wins over this revalidation of older bytes.
      if (!current.equals(artifact(keyId))) {
        return Optional.empty();
      }
      forgetSnapshot();
      moveAtomically(recordTemp, recordPath(keyId));
      recordPlaced = true;
      index.put(touched, clock.millis()); // a revalidation is a use
      return Optional.of(touched);
    } finally {
      lock.unlock();
      if (!recordPlaced) {
        Files.deleteIfExists(recordTemp);
      }
    }
  }

  @Override
  public ByteString readAll(StoredArtifact artifact) throws IOException {
    Path path = blobPath(artifact.sha256());
    Object fileKey;
    try {
      fileKey = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    } catch (NoSuchFileException e) {
      purgeBlob(artifact.sha256(), null);
      throw e;
    }
    byte[] bytes;
    try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size != artifact.size()) {
        purgeBlob(artifact.sha256(), fileKey);
        throw new IOException(
            "blob " + artifact.sha256() + " has " + size + " bytes, expected " + artifact.size());
      }
      if (size > Integer.MAX_VALUE - 8) {
        throw new IOException("blob too large to read into memory: " + size + " bytes");
      }
      bytes = new byte[(int) size];
      ByteBuffer buf = ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) {
        if (ch.read(buf, buf.position()) < 0) {
          purgeBlob(artifact.sha256(), fileKey);
          throw new IOException("blob " + artifact.sha256() + " shrank while being read");
        }
      }
    } catch (NoSuchFileException e) {
      purgeBlob(artifact.sha256(), null);
      throw e;
    }
    String actual = HexFormat.of().formatHex(sha256().digest(bytes));
    if (!actual.equals(artifact.sha256())) {
      log.warn("blob {} is corrupt (hashes to {}); deleting it and its keys",
          artifact.sha256(), actual);
      purgeBlob(artifact.sha256(), fileKey);
      throw new IOException("blob " + artifact.sha256() + " is corrupt: hashes to " + actual);
    }
    return ByteString.fromArrayUnsafe(bytes); // the array is never touched again
  }

  @Override
  public Source<ByteString, NotUsed> read(StoredArtifact artifact, long offset, long length) {
    if (offset < 0 || length < 0) {
      throw new IllegalArgumentException("offset " + offset + ", length " + length);
    }
    Path path = blobPath(artifact.sha256());
    long end = offset + length;
    // unfoldResource runs on the blocking-IO dispatcher and closes the channel however the
    // stream ends; one 64 KiB buffer is in flight per pull, whatever the blob's size. The file
    // is opened on the first pull: a failure there fails the stream quietly, where a failure in
    // unfoldResource's create is also logged as an actor error.
    // A whole read is hashed as it goes and its last chunk is held back until the digest matches
    // (F2, the GrowingBlob technique): a same-size-corrupted blob fails the stream before its last
    // byte, so a client or a peer never receives it complete, and the bad copy is purged. A range
    // cannot be verified whole and streams unverified (docs/security.md).
    boolean verify = offset == 0 && length == artifact.size() && length > 0;
    return Source.unfoldResource(
        () -> new Cursor(path, artifact.sha256(), offset, end, verify), Cursor::next, Cursor::close);
  }

  @Override
  public boolean remove(ArtifactKey key) throws IOException {
    return remove(key.id());
  }

  @Override
  public boolean remove(String keyId) throws IOException {
    List<Path> doomed = new ArrayList<>();
    lock.lock();
    try {
      return dropKey(keyId, doomed);
    } finally {
      lock.unlock();
      delete(doomed);
    }
  }

  @Override
  public Optional<StoredArtifact> held(String keyId) {
    boolean stillLoading;
    lock.lock();
    try {
      StoredArtifact a = index.get(keyId);
      if (a != null) {
        return Optional.of(a);
      }
      stillLoading = loading != null;
    } finally {
      lock.unlock();
    }
    return stillLoading && HEX64.matcher(keyId).matches() ? Optional.ofNullable(onDisk(keyId, null)) : Optional.empty();
  }

  /**
   * While the index loads: the key's record read from disk, when it is sound and its blob is there
   * with its size, added to the index as just used; null when not held. Outside the lock.
   * {@code canonical} as for {@link #used}.
   */
  private StoredArtifact onDisk(String keyId, String canonical) {
    Path record = recordPath(keyId);
    byte[] bytes;
    try {
      bytes = Files.readAllBytes(record);
    } catch (NoSuchFileException e) {
      return null;
    } catch (IOException e) {
      log.warn("unreadable key record {}: {}", record, e.toString());
      return null;
    }
    StoredArtifact a = parseRecord(record, bytes);
    if (a == null || !wellPlaced(record, a) || !blobIntact(a)) {
      return null; // the load drops it
    }
    StoredArtifact found = withSharedHeaders(a);
    lock.lock();
    try {
      StoredArtifact current = used(keyId, canonical);
      if (current != null || loading == null || loading.dropped.contains(keyId)) {
        return current; // the index knows better: loaded, committed or removed since
      }
      if (loading.bad.contains(found.sha256())) {
        return null; // its blob was found bad (and deleted) since it was looked at
      }
      index.put(found, clock.millis());
      addRef(found);
      return found;
    } finally {
      lock.unlock();
    }
  }

  /** Replaces how files that are no longer wanted are deleted (tests: a deletion that blocks). */
  void deletion(Deletion deletion) {
    this.deletion = Objects.requireNonNull(deletion, "deletion");
  }

  @Override
  public long totalSize() {
    lock.lock();
    try {
      return totalSize;
    } finally {
      lock.unlock();
    }
  }

  @Override
  public int keyCount() {
    lock.lock();
    try {
      return index.size();
    } finally {
      lock.unlock();
    }
  }

  /** How many keys this store has stopped holding for {@code reason} since it was opened. */
  public long evictions(Eviction reason) {
    return evictions.get(reason.ordinal());
  }

  /** The configured maximum total blob size. */
  public long maxSizeBytes() {
    return maxSizeBytes;
  }

  // ---------------------------------------------------------------------------------------------
  // Streaming reads

  /**
   * Positional reads of [pos, end) in chunks of at most 64 KiB. When verifying (a whole read), the
   * bytes are hashed as they are read and the last chunk is emitted only if they hash to the
   * blob's name; otherwise the blob and its keys are purged and the stream fails.
   */
  private final class Cursor {
    private final Path path;
    private final String sha256;
    private final long end;
    private final MessageDigest digest;
    private long pos;
    private FileChannel ch;
    private Object fileKey;

    Cursor(Path path, String sha256, long pos, long end, boolean verify) {
      this.path = path;
      this.sha256 = sha256;
      this.pos = pos;
      this.end = end;
      this.digest = verify ? sha256() : null;
    }

    Optional<ByteString> next() throws IOException {
      if (ch == null) {
        if (digest != null) {
          fileKey = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
        }
        ch = FileChannel.open(path, StandardOpenOption.READ);
        long size = ch.size();
        if (size < end) {
          throw new IOException("blob " + sha256 + " has " + size + " bytes, needed " + end);
        }
      }
      if (pos >= end) {
        return Optional.empty();
      }
      byte[] chunk = new byte[(int) Math.min(CHUNK, end - pos)];
      ByteBuffer buf = ByteBuffer.wrap(chunk);
      while (buf.hasRemaining()) {
        if (ch.read(buf, pos + buf.position()) < 0) {
          throw new IOException(
              "blob " + sha256 + " ended at " + (pos + buf.position()) + ", expected " + end);
        }
      }
      pos += chunk.length;
      if (digest != null) {
        digest.update(chunk);
        if (pos == end) {
          String actual = HexFormat.of().formatHex(digest.digest());
          if (!actual.equals(sha256)) {
            log.warn("blob {} is corrupt (hashes to {}); aborting the read, deleting it and its keys",
                sha256, actual);
            purgeBlob(sha256, fileKey);
            throw new IOException("blob " + sha256 + " is corrupt: hashes to " + actual);
          }
        }
      }
      return Optional.of(ByteString.fromArrayUnsafe(chunk));
    }

    void close() throws IOException {
      if (ch != null) {
        ch.close();
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Under the lock

  /** Moves the writer's file to blobs/, or drops it if an intact copy is already there. */
  private void placeBlob(DiskBlobWriter writer, Path blobPath, long size, List<Path> doomed)
      throws IOException {
    long existing = sizeOrMinusOne(blobPath);
    if (existing == size) {
      // Same SHA-256 and size: same bytes (a same-size corruption is caught by readAll). The
      // fresh copy is already in tmp/: deleted after the lock is released.
      doomed.add(writer.tempFile());
    } else {
      // Absent, or damaged behind our back: the fresh copy replaces it.
      moveAtomically(writer.tempFile(), blobPath);
    }
    writer.markCommitted();
  }

  private void addRef(StoredArtifact artifact) {
    totalSize += blobs.reference(artifact.sha256(), artifact.size());
  }

  /** One key less refers to the artifact's blob; discards the blob when it was the last. */
  private void release(StoredArtifact artifact, List<Path> doomed) throws IOException {
    long freed = blobs.release(artifact.sha256());
    if (freed >= 0) { // it was the last
      totalSize -= freed;
      if (loading != null) {
        loading.unreferenced.add(artifact.sha256()); // a key not loaded yet may refer to it
      } else {
        discard(blobPath(artifact.sha256()), doomed);
      }
    }
  }

  /**
   * Removes a key from the index and discards its files: its record, when a file is in the
   * record's place (whatever else is there is not the key's, and is left alone).
   */
  private boolean dropKey(String keyId, List<Path> doomed) throws IOException {
    if (loading != null) {
      loading.dropped.add(keyId);
      if (!index.contains(keyId)) {
        return HEX64.matcher(keyId).matches() && discard(recordPath(keyId), doomed); // not loaded yet
      }
    }
    if (!index.contains(keyId)) {
      return false;
    }
    forgetSnapshot();
    StoredArtifact removed = index.remove(keyId);
    try {
      Path record = recordPath(keyId);
      if (Files.isRegularFile(record, LinkOption.NOFOLLOW_LINKS)) {
        discard(record, doomed);
      }
    } finally {
      release(removed, doomed);
    }
    return true;
  }

  /**
   * Takes a file out of blobs/ or keys/ by renaming it into tmp/ (cheap, under the lock) and adds
   * it to {@code doomed}, to be deleted once the lock is released. A file already gone is skipped
   * (false).
   */
  private boolean discard(Path file, List<Path> doomed) throws IOException {
    Path gone = tmpDir.resolve(UUID.randomUUID() + ".gone");
    try {
      moveAtomically(file, gone);
    } catch (NoSuchFileException e) {
      return false;
    }
    doomed.add(gone);
    return true;
  }

  /** Deletes files discarded under the lock; never called while holding it. */
  private void delete(List<Path> doomed) {
    for (Path file : doomed) {
      try {
        deletion.delete(file);
      } catch (IOException | RuntimeException e) {
        log.warn("could not delete {} (the next start-up's tmp sweep will): {}", file, e.toString());
      }
    }
  }

  /**
   * Deletes a bad blob and every key that refers to it, unless a commit replaced the file since
   * it was found bad.
   *
   * @param badFile the {@link BasicFileAttributes#fileKey()} of the bad file, or null if it was
   *     missing
   */
  private void purgeBlob(String sha256, Object badFile) throws IOException {
    List<Path> doomed = new ArrayList<>();
    List<String> dropped = List.of();
    lock.lock();
    try {
      Path path = blobPath(sha256);
      Object current;
      try {
        current = Files.readAttributes(path, BasicFileAttributes.class).fileKey();
      } catch (NoSuchFileException e) {
        current = null;
      }
      // A file system without file keys (null) gets no protection against this race.
      if (current != null && !current.equals(badFile)) {
        return; // replaced by a fresh copy in the meantime
      }
      forgetSnapshot();
      if (loading != null) {
        loading.bad.add(sha256);
      }
      List<String> keyIds = index.keyIdsOnBlobs(List.of(sha256));
      for (String keyId : keyIds) {
        dropKey(keyId, doomed);
      }
      dropped = keyIds;
      evictions.addAndGet(Eviction.DAMAGED.ordinal(), keyIds.size());
      discard(path, doomed);
    } finally {
      lock.unlock();
      delete(doomed);
      tellEvicted(dropped);
    }
  }

  /** Evicts least recently used keys until the store fits, never {@code keep}. */
  private List<String> evict(String keep, List<Path> doomed) throws IOException {
    if (loading != null) {
      return List.of(); // the size is not known yet: the load's end evicts
    }
    List<String> evicted = new ArrayList<>();
    KeyIndex.Cursor eldest = index.eldestFirst();
    while (totalSize > maxSizeBytes && eldest.next()) {
      String keyId = eldest.keyId();
      if (keyId.equals(keep)) {
        continue;
      }
      StoredArtifact gone = eldest.remove();
      evicted.add(keyId);
      evictions.incrementAndGet(Eviction.SIZE.ordinal());
      try {
        discard(recordPath(keyId), doomed);
      } finally {
        release(gone, doomed);
      }
    }
    if (totalSize > maxSizeBytes) {
      log.warn("store holds {} bytes, over its maximum of {}: the key just committed ({}) alone"
          + " is that large; kept", totalSize, maxSizeBytes, keep);
    }
    return evicted;
  }

  // ---------------------------------------------------------------------------------------------
  // Start-up and close

  /**
   * Writes the whole index, in its LRU order, to the snapshot the next open loads instead of
   * reading every key record. Call it once nothing commits any more (a node: after its front door
   * has drained and its shards have been handed off). The store stays usable: a change after the
   * snapshot was written (a late replica, a purge, a bad blob found by a read) deletes the
   * snapshot first, so the next open rebuilds instead of trusting an index that misses the change.
   * Only recency is not guarded: lookups after the close move keys in an order the snapshot does
   * not have, which costs nothing but that ordering.
   *
   * <p>Written under the lock, so no change can fall between the index being written and the
   * snapshot counting as written. A failure is logged and leaves no snapshot (the next open
   * rebuilds); data is never at risk.
   */
  public void close() {
    // Before the snapshot: it lists the keys whose records the syncs are still writing.
    synchronized (syncs) {
      closing = true; // a commit after this makes itself durable before it returns
      long end = System.nanoTime() + CLOSE_SYNC_WAIT.toNanos();
      try {
        for (long left = CLOSE_SYNC_WAIT.toNanos(); syncing > 0 && left > 0; left = end - System.nanoTime()) {
          TimeUnit.NANOSECONDS.timedWait(syncs, left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (syncing > 0) {
        log.warn("{} commits were not durable yet after {} s: the index snapshot is written without"
            + " waiting for them", syncing, CLOSE_SYNC_WAIT.toSeconds());
      }
    }
    lock.lock();
    try {
      if (loadEnded.getCount() > 0) {
        loadAbandoned = true; // its merge or its orphan sweep must not outlive this store
      }
      if (loading != null) {
        log.info("the store's index is still loading: no index snapshot written; the next start"
            + " rebuilds the index from the key records");
        return;
      }
      long started = System.nanoTime();
      IndexSnapshot.write(tmpDir.resolve(UUID.randomUUID() + ".snapshot"), snapshotFile, index);
      snapshotWritten = true;
      log.info("index snapshot written: {} keys in {} ms", index.size(),
          (System.nanoTime() - started) / 1_000_000);
    } catch (IOException | RuntimeException e) {
      log.warn("could not write the index snapshot ({}); the next start will rebuild the index from"
          + " the key records", e.toString());
    } finally {
      lock.unlock();
    }
  }

  /**
   * Under the lock: the key's artifact, marked used now (moved to the newest end), or null.
   * {@code canonical} is the key whose id {@code keyId} is ({@link ArtifactKey#idOf}), or null when
   * the caller has only the id.
   */
  private StoredArtifact used(String keyId, String canonical) {
    return index.use(keyId, canonical, clock.millis());
  }

  /** Under the lock: the key's artifact, or null (the access order moves it, its use time stays). */
  private StoredArtifact artifact(String keyId) {
    return index.get(keyId);
  }

  @Override
  public List<StoredArtifact> removeUnused(java.util.function.ToLongFunction<String> maxUnusedMillis,
      long shortestMillis) throws IOException {
    List<StoredArtifact> removed = new ArrayList<>();
    List<Path> doomed = new ArrayList<>();
    lock.lock();
    try {
      if (loading != null) {
        return List.of(); // last uses are not all known yet; the next run after the load removes
      }
      long now = clock.millis();
      // Eldest first: every key after the first one used within the shortest age was used since.
      KeyIndex.Cursor eldest = index.eldestFirst();
      while (eldest.next()) {
        long unused = now - eldest.usedAtMillis();
        if (unused < shortestMillis) {
          break;
        }
        String key = eldest.key();
        long max = maxUnusedMillis.applyAsLong(key.substring(0, Math.max(0, key.indexOf('\n'))));
        if (max <= 0 || unused < max) {
          continue;
        }
        forgetSnapshot();
        StoredArtifact gone = eldest.remove();
        removed.add(gone);
        evictions.incrementAndGet(Eviction.UNUSED.ordinal());
        try {
          discard(recordPath(gone.keyId()), doomed);
        } finally {
          release(gone, doomed);
        }
      }
    } finally {
      lock.unlock();
      delete(doomed);
    }
    tellEvicted(removed.stream().map(StoredArtifact::keyId).toList());
    return removed;
  }

  @Override
  public List<StoredArtifact> matching(java.util.function.Predicate<StoredArtifact> filter) {
    try {
      loadEnded.await(); // a purge by prefix must reach every key, not only those loaded so far
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the store's index loads", e);
    }
    List<StoredArtifact> out = new ArrayList<>();
    lock.lock();
    try {
      if (loading != null) { // the load failed or was abandoned: only part of the keys are known
        throw new IllegalStateException("the store's index is not loaded (see the log): cannot list every key");
      }
      KeyIndex.Cursor all = index.eldestFirst(); // reorders nothing
      while (all.next()) {
        StoredArtifact a = all.artifact();
        if (filter.test(a)) {
          out.add(a);
        }
      }
    } finally {
      lock.unlock();
    }
    return out;
  }

  /** The key ids in LRU order, least recently used first (tests); touches no key. */
  List<String> keyIdsEldestFirst() {
    lock.lock();
    try {
      List<String> ids = new ArrayList<>(index.size());
      KeyIndex.Cursor all = index.eldestFirst();
      while (all.next()) {
        ids.add(all.keyId());
      }
      return ids;
    } finally {
      lock.unlock();
    }
  }

  /** Whether this store's index came from a snapshot at open (else from the key records). */
  boolean openedFromSnapshot() {
    return openedFromSnapshot;
  }

  /**
   * Under the lock, before any change to the index or the files: deletes the snapshot a {@link
   * #close} wrote, durably, so that it can never be loaded without this change. Throws (and the
   * change is not made) if it cannot.
   */
  private void forgetSnapshot() throws IOException {
    if (snapshotWritten) {
      Files.deleteIfExists(snapshotFile);
      IndexSnapshot.syncDirectory(snapshotFile.getParent());
      snapshotWritten = false;
      log.info("the store changed after its index snapshot was written: snapshot deleted, the next"
          + " start rebuilds the index");
    }
  }

  /**
   * Moves the snapshot a clean {@link #close} left into tmp/, durably, before the store can change:
   * a crash from here on finds none (tmp/ is emptied at open) and rebuilds. Null when there is none.
   */
  private Path claimSnapshot() throws IOException {
    Path claimed = tmpDir.resolve(UUID.randomUUID() + ".loading");
    try {
      moveAtomically(snapshotFile, claimed);
    } catch (NoSuchFileException e) {
      return null;
    }
    IndexSnapshot.syncDirectory(snapshotFile.getParent());
    return claimed;
  }

  /**
   * Loads the index from the claimed snapshot if it is valid, else from the key records, and
   * merges what changed meanwhile into it; after a rebuild, deletes the blobs no key refers to.
   */
  private void load(Path claimed, int tmpDeleted) {
    long started = System.nanoTime();
    try {
      KeyIndex read = null;
      if (claimed == null) {
        log.info("no index snapshot (the node did not stop cleanly, or this is its first start):"
            + " rebuilding the index from the key records");
      } else {
        try {
          read = IndexSnapshot.read(claimed, sharedHeaders, clock.millis());
        } catch (IndexSnapshot.Invalid | IOException e) {
          log.warn("index snapshot {} is unusable ({}); rebuilding the index from the key records"
              + " instead, nothing is lost", snapshotFile, e.getMessage());
        } finally {
          Files.deleteIfExists(claimed);
        }
      }
      boolean fromSnapshot = read != null;
      List<Path> broken = new ArrayList<>();
      if (read == null) {
        read = readRecords(broken);
      }
      int merged = merge(read, broken);
      int orphans = fromSnapshot ? 0 : deleteOrphanBlobs();
      openedFromSnapshot = fromSnapshot;
      log.info("store index loaded {}: {} keys, {} bytes in {} ms ({} changed while it loaded);"
              + " dropped {} broken records, {} orphan blobs, {} temp files",
          fromSnapshot ? "from its snapshot" : "from the key records", keyCount(), totalSize(),
          (System.nanoTime() - started) / 1_000_000, merged, broken.size(), orphans, tmpDeleted);
    } catch (Abandoned e) {
      log.info("the store was closed while its index loaded: load abandoned");
    } catch (IOException | RuntimeException | Error e) { // an OutOfMemoryError too: never left loading unsaid
      loadFailure = e;
      log.error("the store's index could not be loaded; keys are looked up on disk one at a time,"
          + " nothing is evicted and a purge by prefix fails until the node is started again", e);
      if (e instanceof Error error && !(e instanceof OutOfMemoryError)) {
        throw error;
      }
    } finally {
      loadEnded.countDown();
    }
  }

  /**
   * Every key record, in an index that takes the oldest fetch as the least recently used; the
   * unsound ones (unreadable, misplaced, their blob missing or of the wrong size) go to {@code
   * broken}. Outside the lock.
   */
  private KeyIndex readRecords(List<Path> broken) throws IOException {
    List<StoredArtifact> records = new ArrayList<>();
    for (Path record : filesTwoDeep(keysDir)) {
      StoredArtifact a = readRecord(record);
      if (a == null || !wellPlaced(record, a) || !blobIntact(a)) {
        broken.add(record);
        continue;
      }
      records.add(withSharedHeaders(a));
    }
    // Recency is in no key record; the oldest fetch is taken as the least recently used.
    records.sort(
        Comparator.comparingLong(StoredArtifact::fetchedAtMillis)
            .thenComparing(StoredArtifact::keyId));
    // Nor is the last use: each key counts as used now, so a cleanup of unused keys after a
    // crash waits its whole age again rather than removing a key that was in use.
    long now = clock.millis();
    KeyIndex read = new KeyIndex(records.size());
    for (StoredArtifact a : records) {
      read.put(a, now);
    }
    return read;
  }

  /**
   * Makes the loaded index the store's: keys removed meanwhile or whose blob was found bad are
   * left out, and the keys the index took meanwhile (committed, or looked up on disk) replace
   * their loaded entries as the most recently used. Then deletes what went meanwhile and evicts
   * down to the maximum size. Returns how many keys changed meanwhile.
   */
  private int merge(KeyIndex read, List<Path> broken) throws IOException {
    // The loaded keys' blob references, counted before taking the lock.
    BlobCounts refs = new BlobCounts(read.size());
    long[] total = {read.referenceAll(refs)};
    List<Path> doomed = new ArrayList<>();
    List<String> evicted;
    List<String> damaged = new ArrayList<>();
    int changed;
    lock.lock();
    try {
      if (loadAbandoned) {
        throw new Abandoned();
      }
      Loading meanwhile = loading;
      Set<String> unreferenced = new HashSet<>(meanwhile.unreferenced);
      java.util.function.Consumer<StoredArtifact> leaveOut = old -> {
        long freed = refs.release(old.sha256());
        if (freed >= 0) { // it was the last
          total[0] -= freed;
          unreferenced.add(old.sha256());
        }
      };
      List<String> onBadBlobs = meanwhile.bad.isEmpty() ? List.of() : read.keyIdsOnBlobs(meanwhile.bad);
      for (String keyId : onBadBlobs) {
        if (!index.contains(keyId) && !meanwhile.dropped.contains(keyId)) {
          discard(recordPath(keyId), doomed); // its blob is gone: the key is not held
          damaged.add(keyId);
        }
        meanwhile.dropped.add(keyId);
      }
      for (String keyId : meanwhile.dropped) {
        StoredArtifact old = read.remove(keyId);
        if (old != null) {
          leaveOut.accept(old);
        }
      }
      KeyIndex.Cursor now = index.eldestFirst(); // reorders nothing
      while (now.next()) {
        StoredArtifact current = now.artifact();
        StoredArtifact old = read.put(current, now.usedAtMillis()); // newer than anything loaded
        if (old != null) {
          leaveOut.accept(old);
        }
        total[0] += refs.reference(current.sha256(), current.size());
      }
      changed = meanwhile.dropped.size() + index.size();
      for (Path record : broken) {
        String name = record.getFileName().toString();
        if (!read.contains(name.substring(0, Math.max(0, name.length() - ".json".length())))) {
          discard(record, doomed); // unless a commit meanwhile replaced it with a sound one
        }
      }
      index = read;
      blobs = refs;
      totalSize = total[0];
      loading = null;
      for (String sha256 : unreferenced) {
        if (!blobs.contains(sha256)) {
          discard(blobPath(sha256), doomed);
        }
      }
      evicted = evict(null, doomed); // the maximum may be smaller than at the close
    } finally {
      lock.unlock();
      delete(doomed);
    }
    evictions.addAndGet(Eviction.DAMAGED.ordinal(), damaged.size());
    tellEvicted(damaged); // as a bad copy found by a read is (the replica directory drops this node)
    tellEvicted(evicted);
    return changed;
  }

  /**
   * After a rebuild: deletes the blobs no key refers to (an interrupted commit's), a thousand
   * files to one hold of the lock, so that commits and lookups go on meanwhile.
   */
  private int deleteOrphanBlobs() throws IOException {
    List<Path> files = filesTwoDeep(blobsDir);
    int orphans = 0;
    for (int from = 0; from < files.size(); from += 1000) {
      List<Path> doomed = new ArrayList<>();
      lock.lock();
      try {
        if (loadAbandoned) {
          throw new Abandoned(); // a store opened again on this directory may refer to these
        }
        // A commit moves its blob in and refers to it under the lock: one not referred to now is an orphan.
        for (Path blob : files.subList(from, Math.min(files.size(), from + 1000))) {
          if (!blobs.contains(blob.getFileName().toString()) && discard(blob, doomed)) {
            orphans++;
          }
        }
      } finally {
        lock.unlock();
        delete(doomed);
      }
    }
    return orphans;
  }

  /** The record is where its key id says, and names a plausible blob. */
  private static boolean wellPlaced(Path record, StoredArtifact a) {
    return a.keyId() != null
        && HEX64.matcher(a.keyId()).matches()
        && a.key() != null
        && a.sha256() != null
        && HEX64.matcher(a.sha256()).matches()
        && a.size() >= 0
        && record.getFileName().toString().equals(a.keyId() + ".json")
        && record.getParent().getFileName().toString().equals(fanOut(a.keyId()));
  }

  /**
   * Round-trips a made-up key record through the record files' JSON mapper, in memory: Jackson
   * builds its serializer and deserializer for a type on first use, which would otherwise fall on
   * the first commit, while its clients wait. Reads and writes nothing.
   */
  public void warmUp() {
    try {
      StoredArtifact sample = new StoredArtifact("0".repeat(64), "warm-up", "0".repeat(64), 0,
          List.of(new dev.corral.core.upstream.Header("Content-Type", "application/octet-stream")), 0);
      json.readValue(json.writeValueAsBytes(sample), StoredArtifact.class);
    } catch (IOException e) {
      log.debug("record mapper warm-up: {}", e.toString());
    }
  }

  private StoredArtifact readRecord(Path record) {
    try {
      return parseRecord(record, Files.readAllBytes(record));
    } catch (IOException e) {
      log.warn("unreadable key record {}: {}", record, e.toString());
      return null;
    }
  }

  /** The same record, its headers shared with other keys' ({@link SharedHeaders}). */
  private StoredArtifact withSharedHeaders(StoredArtifact a) {
    return new StoredArtifact(a.keyId(), a.key(), a.sha256(), a.size(), sharedHeaders.share(a.headers()),
        a.fetchedAtMillis());
  }

  private StoredArtifact parseRecord(Path record, byte[] bytes) {
    try {
      return json.readValue(bytes, StoredArtifact.class);
    } catch (IOException | RuntimeException e) {
      log.warn("unreadable key record {}: {}", record, e.toString());
      return null;
    }
  }

  private static List<Path> filesTwoDeep(Path dir) throws IOException {
    List<Path> files = new ArrayList<>();
    try (DirectoryStream<Path> fans = Files.newDirectoryStream(dir)) {
      for (Path fan : fans) {
        if (!Files.isDirectory(fan)) {
          Files.deleteIfExists(fan); // nothing belongs at this level
          continue;
        }
        try (DirectoryStream<Path> children = Files.newDirectoryStream(fan)) {
          for (Path child : children) {
            if (Files.isRegularFile(child)) {
              files.add(child);
            }
          }
        }
      }
    }
    return files;
  }

  private static int deleteChildren(Path dir) throws IOException {
    int n = 0;
    try (DirectoryStream<Path> children = Files.newDirectoryStream(dir)) {
      for (Path child : children) {
        if (Files.isRegularFile(child)) {
          Files.deleteIfExists(child);
          n++;
        }
      }
    }
    return n;
  }

  // ---------------------------------------------------------------------------------------------
  // Files

  private Path writeRecordTemp(StoredArtifact artifact) throws IOException {
    Path temp = tmpDir.resolve(UUID.randomUUID() + ".json");
    byte[] bytes = json.writeValueAsBytes(artifact);
    try (FileChannel ch = FileChannel.open(temp,
        Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), OwnerOnly.file(temp))) {
      ByteBuffer buf = ByteBuffer.wrap(bytes);
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    } catch (IOException e) {
      Files.deleteIfExists(temp);
      throw e;
    }
    return temp;
  }

  static void moveAtomically(Path from, Path to) throws IOException {
    try {
      Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
    } catch (AtomicMoveNotSupportedException e) {
      throw new IOException("the data directory must be on one file system", e);
    }
  }

  private static long sizeOrMinusOne(Path path) {
    try {
      return Files.size(path);
    } catch (IOException e) {
      return -1;
    }
  }

  private boolean blobIntact(StoredArtifact artifact) {
    return sizeOrMinusOne(blobPath(artifact.sha256())) == artifact.size();
  }

  Path blobPath(String sha256) {
    return blobsDir.resolve(fanOut(sha256)).resolve(sha256);
  }

  Path recordPath(String keyId) {
    return keysDir.resolve(fanOut(keyId)).resolve(keyId + ".json");
  }

  Path tmpDir() {
    return tmpDir;
  }

  private static String fanOut(String hex) {
    return hex.substring(0, 2);
  }

  private static MessageDigest sha256() {
    return Sha256.digest();
  }
}
