package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store whose index loads in the background (a node's start): usable at once, every key held
 * found while the index loads, and nothing that changes meanwhile undone by the load. The load
 * is held back by the test ({@link HeldLoad}) and let go when the test says.
 */
class IndexLoadTest {

  private static final List<Header> HEADERS = List.of(new Header("Content-Type", "application/octet-stream"));

  @TempDir Path dir;
  private final DiskStoreTest.ManualClock clock = new DiskStoreTest.ManualClock(1_000_000L);

  /** Keeps the load the store hands it until {@link #run}. */
  private static final class HeldLoad implements Executor {
    private Runnable load;

    @Override
    public void execute(Runnable command) {
      load = command;
    }

    void run() {
      load.run();
    }
  }

  @Test
  void everyKeyHeldIsFoundWhileTheIndexLoadsFromItsSnapshot() throws Exception {
    keysFoundWhileLoading(true);
  }

  @Test
  void everyKeyHeldIsFoundWhileTheIndexIsRebuiltAfterACrash() throws Exception {
    keysFoundWhileLoading(false);
  }

  private void keysFoundWhileLoading(boolean cleanStop) throws Exception {
    DiskStore first = open();
    StoredArtifact a = put(first, key("a"), "alpha");
    StoredArtifact b = put(first, key("b"), "beta");
    if (cleanStop) {
      first.close();
    }
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);

    assertTrue(store.indexLoading());
    assertFalse(Files.exists(dir.resolve(IndexSnapshot.FILE_NAME)), "the snapshot is claimed before any change");
    assertEquals(0, store.keyCount());
    assertEquals(a, store.lookup(key("a")).orElseThrow());
    assertEquals(b, store.held(b.keyId()).orElseThrow());
    assertEquals(4, store.blobSize(b.sha256()).orElseThrow(), "a peer may read a blob of a key not loaded yet");
    assertTrue(store.lookup(key("c")).isEmpty());
    assertEquals("alpha", store.readAll(a).utf8String());

    load.run();
    assertFalse(store.indexLoading());
    assertEquals(cleanStop, store.openedFromSnapshot());
    assertEquals(2, store.keyCount());
    assertEquals(9, store.totalSize());
    assertEquals(Set.of(a.keyId(), b.keyId()), Set.copyOf(store.keyIdsEldestFirst()));
  }

  @Test
  void aKeyRemovedWhileTheIndexLoadsIsNotBroughtBackAndItsSharedBlobStaysForTheOthers() throws Exception {
    DiskStore first = open();
    StoredArtifact a = put(first, key("a"), "same bytes");
    StoredArtifact b = put(first, key("b"), "same bytes"); // one blob for both
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);

    assertTrue(store.lookup(key("a")).isPresent()); // now in the index, its blob counted once
    assertTrue(store.remove(key("a")));
    assertFalse(store.remove(key("a")));
    assertTrue(store.lookup(key("a")).isEmpty());
    assertTrue(Files.exists(store.blobPath(a.sha256())), "b, not loaded yet, still refers to the blob");

    load.run();
    assertTrue(store.lookup(key("a")).isEmpty(), "the load does not bring back a removed key");
    assertEquals(1, store.keyCount());
    assertEquals("same bytes", store.readAll(store.lookup(key("b")).orElseThrow()).utf8String());
    assertTrue(store.remove(key("b")));
    assertFalse(Files.exists(store.blobPath(b.sha256())), "the blob goes with its last key");
    assertEquals(0, store.totalSize());
  }

  @Test
  void aKeyNotLoadedYetIsRemovedWithItsRecordAndItsUnsharedBlobGoesOnceLoaded() throws Exception {
    DiskStore first = open();
    StoredArtifact a = put(first, key("a"), "alpha");
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);

    assertTrue(store.remove(a.keyId())); // a purge by key id, the key never looked up
    assertFalse(Files.exists(store.recordPath(a.keyId())));
    load.run();
    assertTrue(store.held(a.keyId()).isEmpty());
    assertEquals(0, store.keyCount());
    assertFalse(Files.exists(store.blobPath(a.sha256())), "no key refers to the blob once loaded");
  }

  @Test
  void aCommitWhileTheIndexLoadsReplacesTheLoadedEntryAndIsTheMostRecentlyUsed() throws Exception {
    DiskStore first = open();
    StoredArtifact old = put(first, key("a"), "old bytes");
    put(first, key("b"), "beta");
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);

    StoredArtifact fresh = put(store, key("a"), "new bytes!");
    load.run();

    assertEquals(fresh, store.lookup(key("a")).orElseThrow());
    assertEquals(List.of(key("b").id(), key("a").id()), store.keyIdsEldestFirst());
    assertEquals(4 + 10, store.totalSize());
    assertFalse(Files.exists(store.blobPath(old.sha256())), "the replaced bytes are deleted");
  }

  @Test
  void evictionWaitsForTheLoadThenEvictsTheLeastRecentlyUsed() throws Exception {
    DiskStore first = DiskStore.open(dir, 25, clock);
    StoredArtifact a = put(first, key("a"), "0123456789");
    put(first, key("b"), "abcdefghij");
    put(first, key("d"), "klm");
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = DiskStore.open(dir, 25, clock, load);
    List<String> told = new ArrayList<>();
    store.onEvicted(told::add);

    assertTrue(store.lookup(key("a")).isPresent());
    assertTrue(store.lookup(key("b")).isPresent());
    put(store, key("c"), "ABCDEFGHIJ"); // 33 bytes in all, 30 of them known so far: over
    assertEquals(List.of(), told, "nothing is evicted while the sizes are not all known");
    assertTrue(Files.exists(store.blobPath(a.sha256())));

    load.run();
    // d (loaded, not used since) is the least recently used, then a.
    assertEquals(List.of(key("d").id(), key("a").id()), told);
    assertEquals(20, store.totalSize());
    assertTrue(store.lookup(key("b")).isPresent());
    assertTrue(store.lookup(key("c")).isPresent());
    assertEquals(2, store.evictions(DiskStore.Eviction.SIZE));
    assertFalse(Files.exists(store.blobPath(a.sha256())));
  }

  @Test
  void keysOnABlobFoundBadWhileTheIndexLoadsAreNotLoaded() throws Exception {
    DiskStore first = open();
    StoredArtifact a = put(first, key("a"), "same bytes");
    StoredArtifact b = put(first, key("b"), "same bytes");
    first.close();
    Files.writeString(first.blobPath(a.sha256()), "SAME BYTES"); // same size, other bytes
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);
    List<String> told = new ArrayList<>();
    store.onEvicted(told::add);

    StoredArtifact found = store.lookup(key("a")).orElseThrow(); // its size is right
    assertThrowsIo(() -> store.readAll(found));
    assertEquals(List.of(a.keyId()), told);
    load.run();
    assertEquals(List.of(a.keyId(), b.keyId()), told, "b is told as damaged too: the cluster's record drops this node");
    assertEquals(2, store.evictions(DiskStore.Eviction.DAMAGED));
    assertTrue(store.held(b.keyId()).isEmpty(), "b's bytes were the bad blob: not held");
    assertFalse(Files.exists(store.recordPath(b.keyId())));
    assertEquals(0, store.keyCount());
    assertEquals(0, store.totalSize());
  }

  @Test
  void aRebuildDeletesOrphanBlobsButNotOneCommittedWhileItLoads() throws Exception {
    DiskStore first = open();
    put(first, key("a"), "alpha");
    // no close: a crash. An interrupted commit left a blob no key refers to.
    String orphanSha = "ab" + "0".repeat(62);
    Path orphan = first.blobPath(orphanSha);
    Files.createDirectories(orphan.getParent());
    Files.writeString(orphan, "orphan");
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);

    StoredArtifact c = put(store, key("c"), "committed while loading");
    load.run();

    assertFalse(Files.exists(orphan));
    assertEquals("committed while loading", store.readAll(c).utf8String());
    assertEquals(2, store.keyCount());
  }

  @Test
  void aStopWhileTheIndexLoadsWritesNoSnapshotAndACrashWhileItLoadsLosesNothing() throws Exception {
    DiskStore first = open();
    StoredArtifact a = put(first, key("a"), "alpha");
    first.close();
    DiskStore loading = reopen(new HeldLoad());
    loading.close();
    assertFalse(Files.exists(dir.resolve(IndexSnapshot.FILE_NAME)), "an index not loaded is never a snapshot");

    DiskStore next = open(); // the load never ran: as after a crash
    assertFalse(next.openedFromSnapshot());
    assertEquals(a, next.lookup(key("a")).orElseThrow());
  }

  @Test
  void aListingWaitsForTheIndexToLoad() throws Exception {
    DiskStore first = open();
    put(first, key("a"), "alpha");
    put(first, key("b"), "beta");
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);
    store.lookup(key("a"));

    CompletableFuture<List<StoredArtifact>> listing = new CompletableFuture<>();
    Thread lister = new Thread(() -> listing.complete(store.matching(x -> true)));
    lister.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (lister.getState() != Thread.State.WAITING && lister.isAlive() && System.nanoTime() < deadline) {
      Thread.onSpinWait();
    }
    assertEquals(Thread.State.WAITING, lister.getState(), "the listing waits for the load");
    assertFalse(listing.isDone());
    assertTrue(store.indexLoading());
    load.run();
    assertEquals(2, listing.get(10, TimeUnit.SECONDS).size(), "not only the keys loaded so far");
  }

  @Test
  void aCommitThatFailsWhileTheIndexLoadsKeepsTheBlobAKeyNotLoadedYetUses() throws Exception {
    DiskStore first = open();
    StoredArtifact b = put(first, key("b"), "shared");
    first.close();
    HeldLoad load = new HeldLoad();
    DiskStore store = reopen(load);
    Files.createDirectories(store.recordPath(key("c").id()).resolve("x")); // c's record cannot be renamed into place

    assertThrowsIo(() -> put(store, key("c"), "shared")); // the same bytes: b's blob, reused
    load.run();
    assertEquals("shared", store.readAll(store.lookup(key("b")).orElseThrow()).utf8String());
  }

  @Test
  void afterALoadThatFailedAPurgeByPrefixRefusesRatherThanMissKeys() throws Exception {
    DiskStore first = open();
    put(first, key("a"), "alpha");
    first.close();
    HookClock hooked = new HookClock();
    HeldLoad load = new HeldLoad();
    DiskStore store = DiskStore.open(dir, Long.MAX_VALUE, hooked, load);
    hooked.onLoader = () -> {
      throw new IllegalStateException("the load fails");
    };
    Thread loader = new Thread(load::run, HookClock.LOADER);
    loader.start();
    loader.join(TimeUnit.SECONDS.toMillis(10));

    assertTrue(store.indexLoading());
    assertThrowsIllegalState(() -> store.matching(x -> true));
    assertTrue(store.held(key("a").id()).isPresent(), "the key is still held and served");
  }

  @Test
  void aLoadThatFailsOnAnotherThreadNeverFailsTheOpen() throws Exception {
    DiskStore first = open();
    put(first, key("a"), "alpha");
    first.close();
    HookClock hooked = new HookClock();
    hooked.onLoader = () -> {
      throw new IllegalStateException("the load fails");
    };
    Executor finishesFirst = load -> { // on another thread, ended before the open returns
      Thread loader = new Thread(load, HookClock.LOADER);
      loader.start();
      try {
        loader.join();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    };
    DiskStore store = DiskStore.open(dir, Long.MAX_VALUE, hooked, finishesFirst);
    assertTrue(store.indexLoading());
    assertTrue(store.lookup(key("a")).isPresent());
  }

  @Test
  void changesAfterTheRebuildReadTheRecordsAreMergedOverThem() throws Exception {
    HookClock hooked = new HookClock();
    DiskStore first = DiskStore.open(dir, Long.MAX_VALUE, hooked);
    StoredArtifact a = put(first, key("a"), "alpha");
    StoredArtifact b = put(first, key("b"), "same");
    StoredArtifact d = put(first, key("d"), "same");
    // no close: a crash, so the load rebuilds from the records
    HeldLoad load = new HeldLoad();
    DiskStore store = DiskStore.open(dir, Long.MAX_VALUE, hooked, load);
    CountDownLatch read = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    hooked.onLoader = () -> { // the rebuild reads the clock once every record is read, before the merge
      read.countDown();
      try {
        go.await();
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
    };
    Thread loader = new Thread(load::run, HookClock.LOADER);
    loader.start();
    assertTrue(read.await(10, TimeUnit.SECONDS));
    hooked.onLoader = () -> {};
    assertTrue(store.remove(a.keyId()));
    assertTrue(store.remove(b.keyId()));
    StoredArtifact c = put(store, key("c"), "gamma");
    go.countDown();
    loader.join(TimeUnit.SECONDS.toMillis(10));

    assertFalse(store.indexLoading());
    assertTrue(store.held(a.keyId()).isEmpty());
    assertTrue(store.held(b.keyId()).isEmpty());
    assertFalse(Files.exists(store.blobPath(a.sha256())));
    assertTrue(Files.exists(store.blobPath(d.sha256())), "d still uses the blob b shared");
    assertEquals(List.of(d.keyId(), c.keyId()), store.keyIdsEldestFirst());
    assertEquals(4 + 5, store.totalSize());
    assertTrue(Files.exists(store.blobPath(c.sha256())));
  }

  @Test
  void aLoadStillRunningWhenItsStoreIsClosedChangesNothing() throws Exception {
    DiskStore first = open();
    put(first, key("a"), "alpha");
    Path orphan = first.blobPath("cd" + "0".repeat(62)); // no close: a crash; and an orphan blob
    Files.createDirectories(orphan.getParent());
    Files.writeString(orphan, "orphan");
    HeldLoad load = new HeldLoad();
    DiskStore closed = reopen(load);
    closed.close(); // e.g. a node restarted in the same process: a new store may own these files now

    load.run();
    assertTrue(closed.indexLoading(), "abandoned, not merged");
    assertTrue(Files.exists(orphan), "nor swept: the files may be another store's by now");
  }

  /** A clock that runs a hook when read on the thread named {@link #LOADER}. */
  private static final class HookClock extends java.time.Clock {
    static final String LOADER = "test-index-loader";
    volatile Runnable onLoader = () -> {};

    @Override
    public java.time.ZoneId getZone() {
      return java.time.ZoneOffset.UTC;
    }

    @Override
    public java.time.Clock withZone(java.time.ZoneId zone) {
      return this;
    }

    @Override
    public java.time.Instant instant() {
      if (Thread.currentThread().getName().equals(LOADER)) {
        onLoader.run();
      }
      return java.time.Instant.ofEpochMilli(1_000_000L);
    }
  }

  private static void assertThrowsIllegalState(Runnable call) {
    try {
      call.run();
    } catch (IllegalStateException expected) {
      return;
    }
    throw new AssertionError("expected an IllegalStateException");
  }

  private interface IoCall {
    void call() throws IOException;
  }

  private static void assertThrowsIo(IoCall call) {
    try {
      call.call();
    } catch (IOException expected) {
      return;
    }
    throw new AssertionError("expected an IOException");
  }

  /** The store in {@code dir}, its index loaded before this returns. */
  private DiskStore open() throws IOException {
    return DiskStore.open(dir, Long.MAX_VALUE, clock);
  }

  /** The store in {@code dir}, its index loading on {@code load}. */
  private DiskStore reopen(HeldLoad load) throws IOException {
    return DiskStore.open(dir, Long.MAX_VALUE, clock, load);
  }

  private static ArtifactKey key(String name) {
    return ArtifactKey.of("repo", "http://upstream.example/" + name);
  }

  private static StoredArtifact put(ArtifactStore store, ArtifactKey key, String text) throws IOException {
    try (BlobWriter w = store.newBlob(null)) {
      w.write(org.apache.pekko.util.ByteString.fromString(text, StandardCharsets.UTF_8));
      return store.commit(key, w, HEADERS);
    }
  }
}
