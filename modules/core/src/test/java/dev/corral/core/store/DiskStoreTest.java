package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DiskStoreTest {

  private static final long BIG = Long.MAX_VALUE;
  private static final List<Header> HEADERS =
      List.of(new Header("Content-Type", "application/octet-stream"), new Header("ETag", "\"v1\""));

  private static ActorSystem<Void> system;

  @TempDir Path dir;
  private final ManualClock clock = new ManualClock(1_000_000L);

  @BeforeAll
  static void startSystem() {
    system = ActorSystem.create(Behaviors.empty(), "DiskStoreTest");
  }

  @AfterAll
  static void stopSystem() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
  }

  // ---------------------------------------------------------------------------------------------
  // Commit, lookup, bytes

  @Test
  void committedKeyIsFoundWithItsMetadata() throws IOException {
    DiskStore store = open(BIG);
    ArtifactKey key = key("a");
    assertTrue(store.lookup(key).isEmpty());

    byte[] bytes = randomBytes(1000, 1);
    StoredArtifact committed = put(store, key, bytes);

    assertEquals(key.id(), committed.keyId());
    assertEquals(key.canonical(), committed.key());
    assertEquals(sha256Hex(bytes), committed.sha256());
    assertEquals(1000, committed.size());
    assertEquals(HEADERS, committed.headers());
    assertEquals(1_000_000L, committed.fetchedAtMillis());
    assertEquals(Optional.of(committed), store.lookup(key));
    assertEquals(1, store.keyCount());
    assertEquals(1000, store.totalSize());
    assertTrue(Files.exists(store.blobPath(committed.sha256())));
    assertEquals(
        "blobs/" + committed.sha256().substring(0, 2) + "/" + committed.sha256(),
        dir.relativize(store.blobPath(committed.sha256())).toString());
    assertTrue(Files.exists(dir.resolve("keys").resolve(key.id().substring(0, 2))
        .resolve(key.id() + ".json")));
    assertTrue(store.lookup(key("other")).isEmpty());
  }

  @Test
  void aReplicaIsCommittedWithTheHoldersFetchTimeFromTheStart() throws IOException {
    // A copy of stale metadata from another node must never be found fresh, not even for a moment
    // (NpmClusterTest.aStalePackumentAskedOnEveryNodeAtOnceIsRevalidatedOnce saw a HIT when it was
    // committed as fetched now and its time corrected afterwards). Reopening reads the record.
    DiskStore store = open(BIG);
    ArtifactKey key = key("replica");
    try (BlobWriter w = store.newBlob(null)) {
      w.write(ByteString.fromArray(randomBytes(100, 3)));
      StoredArtifact committed = store.commit(key, w, HEADERS, 42L);
      assertEquals(42L, committed.fetchedAtMillis());
    }
    assertEquals(42L, store.lookup(key).orElseThrow().fetchedAtMillis());
    assertEquals(42L, open(BIG).lookup(key).orElseThrow().fetchedAtMillis(), "the record on disk says so too");
  }

  @Test
  void keysDifferingOnlyInVariantOrDigestAreDistinct() throws IOException {
    DiskStore store = open(BIG);
    ArtifactKey plain = ArtifactKey.of("npm", "http://upstream.example/p");
    ArtifactKey variant = new ArtifactKey("npm", "http://upstream.example/p", "abbreviated", null);
    ArtifactKey digest =
        new ArtifactKey("npm", "http://upstream.example/p", "", new Digest("sha1", "ab"));
    put(store, plain, bytes("plain"));
    assertTrue(store.lookup(variant).isEmpty());
    assertTrue(store.lookup(digest).isEmpty());
    put(store, variant, bytes("variant"));
    assertEquals(ByteString.fromString("plain"), store.readAll(store.lookup(plain).orElseThrow()));
    assertEquals(
        ByteString.fromString("variant"), store.readAll(store.lookup(variant).orElseThrow()));
  }

  @Test
  void readAllReturnsTheCommittedBytes() throws IOException {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(300_000, 2);
    StoredArtifact a = put(store, key("a"), bytes);
    assertArrayEquals(bytes, store.readAll(a).toArray());
  }

  @Test
  void emptyBlobRoundTrips() throws Exception {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("empty"), new byte[0]);
    assertEquals(0, a.size());
    assertEquals(sha256Hex(new byte[0]), a.sha256());
    assertEquals(ByteString.emptyByteString(), store.readAll(a));
    assertEquals(ByteString.emptyByteString(), collect(store, a, 0, 0));
    assertTrue(store.lookup(key("empty")).isPresent());
  }

  @Test
  void readStreamsAnyRangeInChunksOfAtMost64KiB() throws Exception {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(200_000, 3);
    StoredArtifact a = put(store, key("a"), bytes);

    assertArrayEquals(bytes, collect(store, a, 0, bytes.length).toArray());
    assertArrayEquals(slice(bytes, 1000, 150_000), collect(store, a, 1000, 150_000).toArray());
    assertArrayEquals(slice(bytes, 199_999, 1), collect(store, a, 199_999, 1).toArray());
    assertEquals(ByteString.emptyByteString(), collect(store, a, 5, 0));

    List<ByteString> chunks =
        store.read(a, 0, bytes.length).runWith(Sink.seq(), system)
            .toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertTrue(chunks.size() >= 4, "chunks: " + chunks.size());
    for (ByteString chunk : chunks) {
      assertTrue(chunk.size() <= 64 * 1024, "chunk of " + chunk.size());
    }
  }

  @Test
  void readFailsWhenTheRangeRunsPastTheBlob() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(1000, 4));
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> collect(store, a, 900, 101));
    assertInstanceOf(IOException.class, e.getCause());
  }

  @Test
  void readFailsWhenTheBlobVanished() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(1000, 5));
    Files.delete(store.blobPath(a.sha256()));
    ExecutionException e =
        assertThrows(ExecutionException.class, () -> collect(store, a, 0, 1000));
    assertInstanceOf(IOException.class, e.getCause());
  }

  @Test
  void readFailsWhenTheBlobWasTruncated() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(100_000, 6));
    Files.write(store.blobPath(a.sha256()), randomBytes(70_000, 6));
    assertThrows(ExecutionException.class, () -> collect(store, a, 0, 100_000));
  }

  // ---------------------------------------------------------------------------------------------
  // Blob writer

  @Test
  void digestsMatchMessageDigestAcrossChunks() throws Exception {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(150_000, 7);
    for (String algorithm : List.of("SHA-512", "SHA-1", "MD5")) {
      try (BlobWriter w = store.newBlob(algorithm)) {
        writeInPieces(w, bytes);
        w.seal();
        assertEquals(sha256Hex(bytes), w.sha256());
        assertEquals(hex(algorithm, bytes), w.extraDigest(), algorithm);
        assertEquals(bytes.length, w.written());
      }
    }
    try (BlobWriter w = store.newBlob(null)) {
      w.write(ByteString.fromArray(bytes));
      w.seal();
      w.seal(); // idempotent
      assertEquals(sha256Hex(bytes), w.sha256());
      assertNull(w.extraDigest());
    }
  }

  @Test
  void unknownExtraAlgorithmIsRefusedWithoutLeavingAFile() throws IOException {
    DiskStore store = open(BIG);
    assertThrows(IllegalArgumentException.class, () -> store.newBlob("NO-SUCH-DIGEST"));
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void writtenAndTempFileLetAReaderFollowTheDownload() throws IOException {
    DiskStore store = open(BIG);
    try (BlobWriter w = store.newBlob(null)) {
      assertEquals(0, w.written());
      w.write(ByteString.fromString("hello "));
      assertEquals(6, w.written());
      assertEquals("hello ", Files.readString(w.tempFile()).substring(0, (int) w.written()));
      w.write(ByteString.fromString("world"));
      assertEquals(11, w.written());
      assertEquals("hello world", Files.readString(w.tempFile()));
      assertTrue(w.tempFile().startsWith(dir.resolve("tmp")));
    }
  }

  @Test
  void closingAnUncommittedBlobLeavesNothingBehind() throws IOException {
    DiskStore store = open(BIG);
    BlobWriter w = store.newBlob("SHA-512");
    w.write(ByteString.fromArray(randomBytes(10_000, 8)));
    Path temp = w.tempFile();
    assertTrue(Files.exists(temp));
    w.close();
    w.close(); // idempotent
    assertFalse(Files.exists(temp));
    assertEquals(List.of(), list(dir.resolve("tmp")));
    assertEquals(List.of(), list(dir.resolve("blobs")));
    assertEquals(0, store.keyCount());
    assertThrows(IllegalStateException.class, () -> store.commit(key("a"), w, HEADERS));

    BlobWriter finished = store.newBlob(null);
    finished.write(ByteString.fromString("x"));
    finished.seal();
    finished.close();
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void commitLeavesNoTemporaryFiles() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("a"), randomBytes(100, 9));
    put(store, key("b"), randomBytes(100, 9)); // dedup path
    store.touch(key("a"), HEADERS, 5);
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void aCommitWhoseRecordCannotBePlacedLeavesNoTemporaryFiles() throws IOException {
    // The record's place is taken by a directory that is not empty: the record's move fails, the
    // commit throws, and neither its record nor its blob stays in tmp/.
    DiskStore store = open(BIG);
    Path place = store.recordPath(key("a").id());
    Files.createDirectories(place);
    Files.writeString(place.resolve("in-the-way"), "x");
    assertThrows(IOException.class, () -> put(store, key("a"), randomBytes(100, 10)));
    assertEquals(List.of(), list(dir.resolve("tmp")));
    assertEquals(0, store.keyCount());
  }

  // ---------------------------------------------------------------------------------------------
  // A commit made durable after it returns (the server's store: DiskStore.syncThreads)

  @Test
  void aCommitIsServedAtOnceAndItsRecordIsPlacedByItsSync() throws IOException {
    List<Runnable> held = new ArrayList<>();
    DiskStore store = syncingLater(held);
    byte[] bytes = randomBytes(1000, 21);
    StoredArtifact a = put(store, key("a"), bytes);
    assertEquals(Optional.of(a), store.lookup(key("a")), "served from the moment the commit returns");
    assertArrayEquals(bytes, store.readAll(a).toArray());
    assertFalse(Files.exists(store.recordPath(a.keyId())), "the record comes with the sync");
    assertEquals(1, held.size());
    held.remove(0).run();
    assertTrue(Files.exists(store.recordPath(a.keyId())));
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void aCrashBeforeTheSyncLosesTheCommitWholeAndNothingElse() throws IOException {
    List<Runnable> held = new ArrayList<>();
    DiskStore store = syncingLater(held);
    StoredArtifact kept = put(store, key("kept"), randomBytes(500, 22));
    held.remove(0).run();
    StoredArtifact lost = put(store, key("lost"), randomBytes(600, 23));
    // The process dies here: no close, and the second sync never runs.
    DiskStore after = reopen(BIG);
    assertEquals(Optional.of(kept), after.lookup(key("kept")));
    assertTrue(after.lookup(key("lost")).isEmpty(), "lost, to be fetched again");
    assertFalse(Files.exists(after.blobPath(lost.sha256())), "its blob, which no record refers to, is deleted");
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void aKeyRemovedBeforeItsSyncGetsNoRecord() throws IOException {
    List<Runnable> held = new ArrayList<>();
    DiskStore store = syncingLater(held);
    StoredArtifact a = put(store, key("a"), randomBytes(700, 24));
    assertTrue(store.remove(key("a")));
    held.remove(0).run(); // its blob went with it
    assertFalse(Files.exists(store.recordPath(a.keyId())), "a purged key must not come back after a restart");
    assertEquals(List.of(), list(dir.resolve("blobs")));

    byte[] shared = randomBytes(800, 24);
    put(store, key("same-bytes"), shared);
    StoredArtifact b = put(store, key("b"), shared);
    assertTrue(store.remove(key("b")));
    held.forEach(Runnable::run); // b's blob stays, for the other key
    assertFalse(Files.exists(store.recordPath(b.keyId())), "a purged key must not come back after a restart");
    assertEquals(List.of(), list(dir.resolve("tmp")));
  }

  @Test
  void theSyncOfAnOlderCommitNeverPlacesItsRecordOverTheNewerOne() throws IOException {
    List<Runnable> held = new ArrayList<>();
    DiskStore store = syncingLater(held);
    byte[] older = randomBytes(100, 25);
    put(store, key("same-bytes"), older); // keeps the older blob in place after "a" moves on
    StoredArtifact v1 = put(store, key("a"), older);
    StoredArtifact v2 = put(store, key("a"), randomBytes(200, 26));
    held.get(2).run(); // v2's sync first, then v1's
    held.get(1).run();
    held.get(0).run();
    // A crash now: the rebuild reads the records.
    DiskStore after = reopen(BIG);
    assertEquals(Optional.of(v2), after.lookup(key("a")));
    assertTrue(after.lookup(key("same-bytes")).isPresent());
    assertEquals(v1.sha256(), after.lookup(key("same-bytes")).get().sha256());
  }

  @Test
  void aCommitThatCannotBeMadeDurableIsUndone() throws IOException {
    List<Runnable> held = new ArrayList<>();
    DiskStore store = syncingLater(held);
    Path place = store.recordPath(key("a").id());
    Files.createDirectories(place);
    Files.writeString(place.resolve("in-the-way"), "x");
    StoredArtifact a = put(store, key("a"), randomBytes(100, 27));
    assertTrue(store.lookup(key("a")).isPresent(), "served until its sync fails");
    held.remove(0).run(); // logs a warning; nothing is thrown at the sync thread
    assertTrue(store.lookup(key("a")).isEmpty(), "not kept: it would not survive a restart");
    assertEquals(0, store.keyCount());
    assertFalse(Files.exists(store.blobPath(a.sha256())));
    assertEquals(List.of(), list(dir.resolve("tmp")));
    assertTrue(Files.exists(place.resolve("in-the-way")), "what was in the record's place is left alone");
  }

  @Test
  void closeWaitsForTheSyncsBeforeItWritesTheSnapshot() throws Exception {
    CountDownLatch gate = new CountDownLatch(1);
    AtomicLong handedOver = new AtomicLong();
    DiskStore store = new DiskStore(dir, BIG, clock, Runnable::run, r -> {
      handedOver.incrementAndGet();
      new Thread(() -> {
        try {
          gate.await();
        } catch (InterruptedException e) {
          return;
        }
        r.run();
      }).start();
    });
    StoredArtifact a = put(store, key("a"), randomBytes(100, 28));
    Thread closer = new Thread(store::close);
    closer.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (closer.isAlive() && closer.getState() != Thread.State.TIMED_WAITING && System.nanoTime() < deadline) {
      java.util.concurrent.locks.LockSupport.parkNanos(100_000); // a probe: the closer comes to wait for the sync
    }
    assertEquals(Thread.State.TIMED_WAITING, closer.getState(), "close waits for the sync");
    assertFalse(Files.exists(dir.resolve(IndexSnapshot.FILE_NAME)), "no snapshot before the sync");
    gate.countDown();
    closer.join(10_000);
    assertFalse(closer.isAlive());
    assertTrue(Files.exists(store.recordPath(a.keyId())));
    assertTrue(Files.exists(dir.resolve(IndexSnapshot.FILE_NAME)));

    StoredArtifact late = put(store, key("late"), randomBytes(100, 29)); // after close: durable at once
    assertEquals(1, handedOver.get());
    assertTrue(Files.exists(store.recordPath(late.keyId())));
  }

  @Test
  void aBlobIsCommittedOnlyOnce() throws IOException {
    DiskStore store = open(BIG);
    BlobWriter w = store.newBlob(null);
    w.write(ByteString.fromString("once"));
    store.commit(key("a"), w, HEADERS);
    assertThrows(IllegalStateException.class, () -> store.commit(key("b"), w, HEADERS));
    assertTrue(store.lookup(key("b")).isEmpty());
  }

  @Test
  void aBlobFromAnotherStoreIsRefused(@TempDir Path otherDir) throws IOException {
    DiskStore store = open(BIG);
    DiskStore other = new DiskStore(otherDir, BIG, clock);
    try (BlobWriter w = other.newBlob(null)) {
      w.write(ByteString.fromString("x"));
      assertThrows(IllegalArgumentException.class, () -> store.commit(key("a"), w, HEADERS));
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Dedup and replacement

  @Test
  void identicalContentIsStoredOnceAndDeletedWithItsLastKey() throws IOException {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(5000, 10);
    StoredArtifact a = put(store, key("a"), bytes);
    StoredArtifact b = put(store, key("b"), bytes);
    assertEquals(a.sha256(), b.sha256());
    assertEquals(1, list(dir.resolve("blobs")).size());
    assertEquals(5000, store.totalSize());
    assertEquals(2, store.keyCount());

    assertTrue(store.remove(key("a")));
    assertFalse(store.remove(key("a")));
    assertTrue(store.lookup(key("a")).isEmpty());
    assertTrue(Files.exists(store.blobPath(b.sha256())));
    assertArrayEquals(bytes, store.readAll(store.lookup(key("b")).orElseThrow()).toArray());
    assertEquals(5000, store.totalSize());

    assertTrue(store.remove(key("b")));
    assertFalse(Files.exists(store.blobPath(b.sha256())));
    assertEquals(0, store.totalSize());
    assertEquals(0, store.keyCount());
    assertEquals(List.of(), list(dir.resolve("keys")));
  }

  @Test
  void recommittingAKeyReplacesItsBytesAndFreesTheOldBlob() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact v1 = put(store, key("a"), randomBytes(1000, 11));
    clock.advance(10);
    byte[] v2bytes = randomBytes(3000, 12);
    StoredArtifact v2 = put(store, key("a"), v2bytes);
    assertEquals(Optional.of(v2), store.lookup(key("a")));
    assertFalse(Files.exists(store.blobPath(v1.sha256())));
    assertEquals(3000, store.totalSize());
    assertEquals(1, store.keyCount());

    // Same bytes again: the blob stays (it is both the old and the new one).
    StoredArtifact v3 = put(store, key("a"), v2bytes);
    assertEquals(v2.sha256(), v3.sha256());
    assertTrue(Files.exists(store.blobPath(v3.sha256())));
    assertEquals(3000, store.totalSize());
  }

  @Test
  void aCommitRepairsABlobDamagedBehindTheStoresBack() throws IOException {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(2000, 13);
    StoredArtifact a = put(store, key("a"), bytes);
    Files.write(store.blobPath(a.sha256()), new byte[10]); // truncated by someone
    put(store, key("b"), bytes); // same content fetched again for another key
    assertArrayEquals(bytes, store.readAll(store.lookup(key("b")).orElseThrow()).toArray());
    assertArrayEquals(bytes, store.readAll(store.lookup(key("a")).orElseThrow()).toArray());
  }

  // ---------------------------------------------------------------------------------------------
  // Eviction

  @Test
  void evictsLeastRecentlyUsedKeysAndLookupRefreshesRecency() throws IOException {
    DiskStore store = open(300);
    StoredArtifact a = put(store, key("a"), randomBytes(100, 20));
    StoredArtifact b = put(store, key("b"), randomBytes(100, 21));
    put(store, key("c"), randomBytes(100, 22));
    assertEquals(300, store.totalSize());

    assertTrue(store.lookup(key("a")).isPresent()); // a is now more recent than b
    put(store, key("d"), randomBytes(100, 23));

    assertTrue(store.lookup(key("b")).isEmpty());
    assertFalse(Files.exists(store.blobPath(b.sha256())));
    assertTrue(Files.exists(store.blobPath(a.sha256())));
    assertEquals(300, store.totalSize());
    assertEquals(3, store.keyCount());
    // order now (oldest first): c, a, d
    assertTrue(store.lookup(key("c")).isPresent()); // order: a, d, c
    // a 150-byte key: 450 bytes, so a and d go
    put(store, key("e"), randomBytes(150, 24));
    assertTrue(store.lookup(key("a")).isEmpty());
    assertTrue(store.lookup(key("d")).isEmpty());
    assertTrue(store.lookup(key("c")).isPresent());
    assertTrue(store.lookup(key("e")).isPresent());
    assertEquals(250, store.totalSize());
    assertEquals(2, list(dir.resolve("blobs")).size());
    assertEquals(2, list(dir.resolve("keys")).size());
  }

  @Test
  void touchRefreshesRecency() throws IOException {
    DiskStore store = open(200);
    put(store, key("a"), randomBytes(100, 25));
    put(store, key("b"), randomBytes(100, 26));
    store.touch(key("a"), HEADERS, 7);
    put(store, key("c"), randomBytes(100, 27));
    assertTrue(store.lookup(key("a")).isPresent());
    assertTrue(store.lookup(key("b")).isEmpty());
  }

  @Test
  void aSharedBlobCountsOnceTowardsTheMaximum() throws IOException {
    DiskStore store = open(250);
    byte[] shared = randomBytes(100, 28);
    put(store, key("a"), shared);
    put(store, key("b"), shared);
    put(store, key("c"), randomBytes(100, 29));
    assertEquals(200, store.totalSize());
    assertEquals(3, store.keyCount()); // nothing evicted: 200 <= 250
  }

  @Test
  void evictingOneOfTwoKeysOfASharedBlobFreesNothingSoEvictionGoesOn() throws IOException {
    DiskStore store = open(200);
    byte[] shared = randomBytes(100, 30);
    put(store, key("a"), shared);
    put(store, key("b"), shared);
    put(store, key("c"), randomBytes(100, 31));
    put(store, key("d"), randomBytes(100, 32)); // 300 > 200: a goes (frees nothing), then b
    assertTrue(store.lookup(key("a")).isEmpty());
    assertTrue(store.lookup(key("b")).isEmpty());
    assertTrue(store.lookup(key("c")).isPresent());
    assertTrue(store.lookup(key("d")).isPresent());
    assertEquals(200, store.totalSize());
  }

  @Test
  void theKeyJustCommittedIsKeptEvenWhenAloneOverTheMaximum() throws IOException {
    DiskStore store = open(100);
    put(store, key("small"), randomBytes(50, 33));
    byte[] big = randomBytes(500, 34);
    StoredArtifact a = put(store, key("big"), big);
    assertEquals(Optional.of(a), store.lookup(key("big")));
    assertArrayEquals(big, store.readAll(a).toArray());
    assertTrue(store.lookup(key("small")).isEmpty());
    assertEquals(500, store.totalSize());
    assertEquals(1, store.keyCount());

    // The next commit evicts it like any other least recently used key.
    put(store, key("next"), randomBytes(10, 35));
    assertTrue(store.lookup(key("big")).isEmpty());
    assertEquals(10, store.totalSize());
  }

  // ---------------------------------------------------------------------------------------------
  // Touch

  @Test
  void touchUpdatesHeadersAndFetchedAtDurably() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(100, 40));
    List<Header> fresh = List.of(new Header("ETag", "\"v2\""));
    StoredArtifact touched = store.touch(key("a"), fresh, 42L).orElseThrow();
    assertEquals(a.sha256(), touched.sha256());
    assertEquals(a.size(), touched.size());
    assertEquals(fresh, touched.headers());
    assertEquals(42L, touched.fetchedAtMillis());
    assertEquals(Optional.of(touched), store.lookup(key("a")));
    assertEquals(Optional.of(touched), reopen(BIG).lookup(key("a")));
    assertTrue(store.touch(key("missing"), fresh, 1L).isEmpty());
    assertTrue(store.lookup(key("missing")).isEmpty());
  }

  // ---------------------------------------------------------------------------------------------
  // Damage behind the store's back (SEMANTICS F2)

  @Test
  void aKeyWhoseBlobWasDeletedIsNotReturnedAndItsRecordIsRemoved() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(100, 50));
    put(store, key("b"), randomBytes(100, 51));
    Files.delete(store.blobPath(a.sha256()));

    assertTrue(store.lookup(key("a")).isEmpty());
    assertFalse(Files.exists(store.recordPath(a.keyId())));
    assertEquals(1, store.keyCount());
    assertEquals(100, store.totalSize());
    assertTrue(store.lookup(key("b")).isPresent());
    assertTrue(reopen(BIG).lookup(key("a")).isEmpty());
  }

  @Test
  void aCopyFoundBadIsReportedAsAnEvictionSoTheRecordDropsThisHolder() throws IOException {
    // Issue 13 item 3: a holder whose copy turned out missing or bad leaves the key's record
    // through the same path as an eviction.
    DiskStore store = open(BIG);
    List<String> gone = new java.util.concurrent.CopyOnWriteArrayList<>();
    store.onEvicted(gone::add);
    StoredArtifact missing = put(store, key("missing"), randomBytes(100, 60));
    StoredArtifact shortened = put(store, key("short"), randomBytes(100, 61));
    byte[] bytes = randomBytes(1000, 62);
    StoredArtifact corrupt = put(store, key("corrupt"), bytes);
    put(store, key("same"), bytes); // a second key of the corrupt blob
    StoredArtifact fine = put(store, key("fine"), randomBytes(100, 63));
    Files.delete(store.blobPath(missing.sha256()));
    Files.write(store.blobPath(shortened.sha256()), randomBytes(99, 61));
    byte[] flipped = bytes.clone();
    flipped[10] ^= 1;
    Files.write(store.blobPath(corrupt.sha256()), flipped);

    assertTrue(store.lookup(key("missing")).isEmpty());
    assertTrue(store.lookup(key("short")).isEmpty());
    assertThrows(IOException.class, () -> store.readAll(corrupt));
    assertTrue(store.lookup(key("fine")).isPresent());
    assertEquals(java.util.Set.of(missing.keyId(), shortened.keyId(), corrupt.keyId(), key("same").id()),
        java.util.Set.copyOf(gone));
    assertEquals(4, gone.size(), "each once: " + gone);
    store.remove(fine.keyId());
    assertEquals(4, gone.size(), "a removal (purge) is not an eviction");
    assertFalse(gone.contains(fine.keyId()));
  }

  @Test
  void aKeyWhoseBlobHasTheWrongSizeIsNotReturned() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(100, 52));
    Files.write(store.blobPath(a.sha256()), randomBytes(99, 52));
    assertTrue(store.lookup(key("a")).isEmpty());
    assertFalse(Files.exists(store.recordPath(a.keyId())));
    assertFalse(Files.exists(store.blobPath(a.sha256())));
    assertEquals(0, store.totalSize());
  }

  @Test
  void aCorruptBlobFailsReadAllAndIsDeletedWithEveryKeyPointingToIt() throws IOException {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(1000, 53);
    StoredArtifact a = put(store, key("a"), bytes);
    put(store, key("b"), bytes);
    put(store, key("c"), randomBytes(10, 54));
    byte[] corrupt = bytes.clone();
    corrupt[500] ^= 1;
    Files.write(store.blobPath(a.sha256()), corrupt);

    assertTrue(store.lookup(key("a")).isPresent()); // same size: lookup cannot tell
    assertThrows(IOException.class, () -> store.readAll(a));

    assertTrue(store.lookup(key("a")).isEmpty());
    assertTrue(store.lookup(key("b")).isEmpty());
    assertFalse(Files.exists(store.blobPath(a.sha256())));
    assertFalse(Files.exists(store.recordPath(key("a").id())));
    assertFalse(Files.exists(store.recordPath(key("b").id())));
    assertEquals(1, store.keyCount());
    assertEquals(10, store.totalSize());

    // A fresh fetch of the same bytes is stored and served again.
    StoredArtifact again = put(store, key("a"), bytes);
    assertArrayEquals(bytes, store.readAll(again).toArray());
  }

  @Test
  void aWholeStreamedReadOfACorruptBlobFailsBeforeItsLastByteAndPurgesIt() throws Exception {
    // F2: a large hit streams from disk; a same-size corruption must never be served complete.
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(300_000, 56); // five chunks
    StoredArtifact a = put(store, key("a"), bytes);
    put(store, key("b"), bytes);
    byte[] corrupt = bytes.clone();
    corrupt[1000] ^= 1; // in the first chunk: everything before the last chunk is read fine
    Files.write(store.blobPath(a.sha256()), corrupt);

    List<ByteString> received = new ArrayList<>();
    CompletableFuture<?> done = store.read(a, 0, bytes.length)
        .runForeach(received::add, system).toCompletableFuture();
    ExecutionException failed = assertThrows(ExecutionException.class, () -> done.get(10, TimeUnit.SECONDS));
    assertInstanceOf(IOException.class, failed.getCause());
    long got = received.stream().mapToLong(ByteString::size).sum();
    assertTrue(got < bytes.length, "the last byte is never emitted: " + got);

    assertTrue(store.lookup(key("a")).isEmpty(), "the bad copy is dropped");
    assertTrue(store.lookup(key("b")).isEmpty(), "with every key pointing to it");
    assertFalse(Files.exists(store.blobPath(a.sha256())));
    assertEquals(0, store.totalSize());

    // A range cannot be verified whole and is served as stored (docs/security.md).
    StoredArtifact again = put(store, key("a"), bytes);
    assertArrayEquals(bytes, collect(store, again, 0, bytes.length).toArray(), "an intact blob streams whole");
    Files.write(store.blobPath(again.sha256()), corrupt);
    assertArrayEquals(slice(corrupt, 0, 2000), collect(store, again, 0, 2000).toArray());
    assertTrue(store.lookup(key("a")).isPresent(), "a range read does not purge");
  }

  @Test
  void readAllOfAVanishedBlobFailsAndDropsTheKey() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), randomBytes(100, 55));
    Files.delete(store.blobPath(a.sha256()));
    assertThrows(IOException.class, () -> store.readAll(a));
    assertEquals(0, store.keyCount());
    assertFalse(Files.exists(store.recordPath(a.keyId())));
  }

  // ---------------------------------------------------------------------------------------------
  // Start-up (SEMANTICS L3)

  @Test
  void reopeningRebuildsTheSameIndex() throws IOException {
    DiskStore store = open(BIG);
    List<StoredArtifact> committed = new ArrayList<>();
    byte[] shared = randomBytes(777, 60);
    for (int i = 0; i < 20; i++) {
      clock.advance(1);
      byte[] bytes = i % 5 == 0 ? shared : randomBytes(100 + i, 60 + i);
      committed.add(put(store, key("k" + i), bytes));
    }

    DiskStore reopened = reopen(BIG);
    assertEquals(store.keyCount(), reopened.keyCount());
    assertEquals(store.totalSize(), reopened.totalSize());
    for (int i = 0; i < 20; i++) {
      assertEquals(Optional.of(committed.get(i)), reopened.lookup(key("k" + i)));
    }
    assertArrayEquals(shared, reopened.readAll(committed.get(5)).toArray());
  }

  @Test
  void rebuildChecksSizesButDoesNotHash() throws IOException {
    DiskStore store = open(BIG);
    byte[] bytes = randomBytes(1000, 61);
    StoredArtifact a = put(store, key("a"), bytes);
    byte[] corrupt = bytes.clone();
    corrupt[0] ^= 1;
    Files.write(store.blobPath(a.sha256()), corrupt);

    // Same size: the rebuild keeps it (hashing 10 GiB at start-up is not an option)...
    DiskStore reopened = reopen(BIG);
    assertEquals(Optional.of(a), reopened.lookup(key("a")));
    // ...and the first full read catches it.
    assertThrows(IOException.class, () -> reopened.readAll(a));
    assertTrue(reopened.lookup(key("a")).isEmpty());
  }

  @Test
  void rebuildDropsRecordsWithMissingOrWrongSizedBlobsAndDeletesOrphans() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact missing = put(store, key("missing"), randomBytes(100, 62));
    StoredArtifact shortened = put(store, key("short"), randomBytes(100, 63));
    StoredArtifact ok = put(store, key("ok"), randomBytes(100, 64));
    Files.delete(store.blobPath(missing.sha256()));
    Files.write(store.blobPath(shortened.sha256()), new byte[50]);
    // an orphan blob (a crash between blob rename and record rename)
    String orphanSha = sha256Hex(bytes("orphan"));
    Path orphan = store.blobPath(orphanSha);
    Files.createDirectories(orphan.getParent());
    Files.write(orphan, bytes("orphan"));
    // an unreadable record
    Path garbage = dir.resolve("keys").resolve("00").resolve("00" + "0".repeat(62) + ".json");
    Files.createDirectories(garbage.getParent());
    Files.writeString(garbage, "{not json");

    DiskStore reopened = reopen(BIG);
    assertEquals(1, reopened.keyCount());
    assertEquals(100, reopened.totalSize());
    assertEquals(Optional.of(ok), reopened.lookup(key("ok")));
    assertTrue(reopened.lookup(key("missing")).isEmpty());
    assertTrue(reopened.lookup(key("short")).isEmpty());
    assertFalse(Files.exists(reopened.recordPath(missing.keyId())));
    assertFalse(Files.exists(reopened.recordPath(shortened.keyId())));
    assertFalse(Files.exists(reopened.blobPath(shortened.sha256())));
    assertFalse(Files.exists(orphan));
    assertFalse(Files.exists(garbage));
  }

  @Test
  void leftoverTemporaryFilesAreDeletedAtOpen() throws IOException {
    DiskStore store = open(BIG);
    BlobWriter abandoned = store.newBlob(null); // a crash mid-download: never closed
    abandoned.write(ByteString.fromString("half a file"));
    Path stray = dir.resolve("tmp").resolve("whatever.json");
    Files.writeString(stray, "{}");
    assertEquals(2, list(dir.resolve("tmp")).size());

    DiskStore reopened = reopen(BIG);
    assertEquals(List.of(), list(dir.resolve("tmp")));
    assertEquals(0, reopened.keyCount());
    assertEquals(List.of(), list(dir.resolve("blobs")));
  }

  @Test
  void reopeningWithASmallerMaximumEvictsTheOldestFetchesFirst() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("old"), randomBytes(100, 70));
    clock.advance(1000);
    put(store, key("new"), randomBytes(100, 71));
    clock.advance(1000);
    put(store, key("newest"), randomBytes(100, 72));

    DiskStore reopened = reopen(200);
    assertTrue(reopened.lookup(key("old")).isEmpty());
    assertTrue(reopened.lookup(key("new")).isPresent());
    assertTrue(reopened.lookup(key("newest")).isPresent());
    assertEquals(200, reopened.totalSize());
    assertEquals(2, list(dir.resolve("blobs")).size());
  }

  // ---------------------------------------------------------------------------------------------
  // Concurrency

  @Test
  void concurrentCommitsAndLookupsOfDistinctKeysKeepTheAccountsStraight() throws Exception {
    concurrencySmoke(BIG, 4, 40);
  }

  @Test
  void concurrentCommitsUnderEvictionKeepTheAccountsStraight() throws Exception {
    concurrencySmoke(20_000, 4, 40);
  }

  private void concurrencySmoke(long max, int threads, int perThread) throws Exception {
    DiskStore store = open(max);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    CountDownLatch start = new CountDownLatch(1);
    byte[] shared = randomBytes(1000, 80);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int thread = t;
        futures.add(pool.submit(() -> {
          start.await();
          for (int i = 0; i < perThread; i++) {
            ArtifactKey k = key("t" + thread + "-" + i);
            // every tenth key shares content with other threads' keys
            byte[] bytes = i % 10 == 0 ? shared : randomBytes(200 + i, thread * 1000 + i);
            StoredArtifact a = put(store, k, bytes);
            Optional<StoredArtifact> found = store.lookup(k);
            if (max == BIG) {
              assertEquals(Optional.of(a), found);
            }
            if (found.isPresent()) {
              try {
                assertArrayEquals(bytes, store.readAll(found.get()).toArray());
              } catch (IOException evictedMeanwhile) {
                if (max == BIG) {
                  throw evictedMeanwhile;
                }
              }
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : futures) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }

    if (max == BIG) {
      assertEquals(threads * perThread, store.keyCount());
    } else {
      assertTrue(store.totalSize() <= max, "total " + store.totalSize());
    }
    // The accounts match the disk: every blob once, every key one record.
    long onDisk = 0;
    for (Path blob : list(dir.resolve("blobs"))) {
      onDisk += Files.size(blob);
    }
    assertEquals(onDisk, store.totalSize());
    assertEquals(store.keyCount(), list(dir.resolve("keys")).size());
    assertEquals(List.of(), list(dir.resolve("tmp")));
    DiskStore reopened = reopen(max);
    assertEquals(store.keyCount(), reopened.keyCount());
    assertEquals(store.totalSize(), reopened.totalSize());
  }

  // ---------------------------------------------------------------------------------------------
  // K2: no deletion under the lock

  @Test
  void aSlowDeletionDoesNotHoldUpOtherKeys() throws Exception {
    DiskStore store = open(2500);
    put(store, key("a"), randomBytes(1000, 21));
    put(store, key("b"), randomBytes(1000, 22));
    CountDownLatch deleting = new CountDownLatch(1);
    CountDownLatch finish = new CountDownLatch(1);
    store.deletion(file -> {
      deleting.countDown();
      try {
        finish.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Files.deleteIfExists(file);
    });
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<Boolean> removal = pool.submit(() -> store.remove(key("a")));
      assertTrue(deleting.await(10, TimeUnit.SECONDS), "the removal reached its deletion");
      // The removal is stuck deleting a's files; another key's lookup and commit go on.
      Future<Boolean> other = pool.submit(() -> {
        boolean found = store.lookup(key("b")).isPresent();
        put(store, key("c"), randomBytes(1000, 23));
        return found && store.lookup(key("c")).isPresent();
      });
      assertTrue(other.get(10, TimeUnit.SECONDS), "b found and c committed during the deletion");
      assertFalse(removal.isDone());
      finish.countDown();
      assertTrue(removal.get(10, TimeUnit.SECONDS));
      assertTrue(store.lookup(key("a")).isEmpty());
      assertEquals(List.of(), list(dir.resolve("tmp")));
      assertEquals(2, list(dir.resolve("blobs")).size());
    } finally {
      finish.countDown();
      pool.shutdownNow();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Helpers

  /** The start's warm-up of the record mapper is in memory: the store's files stay as they were. */
  @Test
  void theWarmUpWritesNothing() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("a"), "bytes of a".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    List<String> before = files();
    store.warmUp();
    assertEquals(before, files());
    assertTrue(store.lookup(key("a")).isPresent());
  }

  private List<String> files() throws IOException {
    try (var walk = Files.walk(dir)) {
      return walk.map(p -> dir.relativize(p) + (Files.isRegularFile(p) ? " " + p.toFile().length() : "")).sorted().toList();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Keys unused for longer than their repository's max-age-unused

  private static final long DAY = 86_400_000L;

  @Test
  void keysUnusedForTheirRepositorysAgeGoAndKeysUsedSinceOrOfOtherRepositoriesStay() throws IOException {
    DiskStore store = open(BIG);
    List<String> told = new ArrayList<>();
    store.onEvicted(told::add);
    ArtifactKey served = key("served");
    ArtifactKey unused = key("unused");
    ArtifactKey revalidated = key("revalidated");
    ArtifactKey otherRepo = ArtifactKey.of("other", "http://upstream.example/unused");
    for (ArtifactKey k : List.of(served, unused, revalidated, otherRepo)) {
      put(store, k, randomBytes(100, k.id().hashCode()));
    }
    clock.advance(6 * DAY);
    assertTrue(store.indexed(served).isPresent()); // a hit is a use
    assertTrue(store.touch(revalidated, HEADERS, clock.millis()).isPresent()); // so is a revalidation
    clock.advance(DAY + 1);

    // repo: 7 days; other: never.
    List<StoredArtifact> removed = store.removeUnused(r -> r.equals("repo") ? 7 * DAY : 0, 7 * DAY);
    assertEquals(List.of(unused.id()), removed.stream().map(StoredArtifact::keyId).toList());
    assertEquals(List.of(unused.id()), told, "the replica directory is told, as of an evicted key");
    assertTrue(store.lookup(unused).isEmpty());
    assertTrue(store.lookup(otherRepo).isPresent(), "a repository without the policy keeps its keys");
    assertEquals(1, store.evictions(DiskStore.Eviction.UNUSED));
    assertEquals(300, store.totalSize());

    // The looks above were uses too: nothing is due now; seven days later both repo keys left are.
    assertEquals(List.of(), store.removeUnused(r -> r.equals("repo") ? 7 * DAY : 0, 7 * DAY));
    clock.advance(7 * DAY);
    assertEquals(2, store.removeUnused(r -> r.equals("repo") ? 7 * DAY : 0, 7 * DAY).size());
    assertEquals(1, store.keyCount());
  }

  @Test
  void theLastUseSurvivesACleanRestartAndARebuildCountsEveryKeyAsUsedAtTheOpen() throws IOException {
    DiskStore store = open(BIG);
    ArtifactKey old = key("old");
    ArtifactKey recent = key("recent");
    put(store, old, randomBytes(100, 1));
    clock.advance(5 * DAY);
    put(store, recent, randomBytes(100, 2));
    store.close();
    DiskStore reopened = reopen(BIG);
    assertTrue(reopened.openedFromSnapshot());
    clock.advance(3 * DAY);
    // 8 days unused against 3: only the old key, whose last use the snapshot kept.
    assertEquals(List.of(old.id()),
        reopened.removeUnused(r -> 7 * DAY, 7 * DAY).stream().map(StoredArtifact::keyId).toList());

    // No snapshot (a crash): the rebuild cannot know the last uses and takes the open as one.
    DiskStore crashed = reopen(BIG);
    assertFalse(crashed.openedFromSnapshot());
    clock.advance(6 * DAY);
    assertEquals(List.of(), crashed.removeUnused(r -> 7 * DAY, 7 * DAY));
    clock.advance(DAY);
    assertEquals(List.of(recent.id()),
        crashed.removeUnused(r -> 7 * DAY, 7 * DAY).stream().map(StoredArtifact::keyId).toList());
  }

  private DiskStore open(long max) throws IOException {
    return new DiskStore(dir, max, clock);
  }

  /** A store whose commits are made durable when the test runs what lands in {@code held}. */
  private DiskStore syncingLater(List<Runnable> held) throws IOException {
    return new DiskStore(dir, BIG, clock, Runnable::run, held::add);
  }

  private DiskStore reopen(long max) throws IOException {
    return DiskStore.open(dir, max, clock);
  }

  private static ArtifactKey key(String name) {
    return ArtifactKey.of("repo", "http://upstream.example/" + name);
  }

  private static StoredArtifact put(ArtifactStore store, ArtifactKey key, byte[] bytes)
      throws IOException {
    try (BlobWriter w = store.newBlob(null)) {
      writeInPieces(w, bytes);
      return store.commit(key, w, HEADERS);
    }
  }

  /** Writes in uneven pieces, some of them multi-chunk ByteStrings. */
  private static void writeInPieces(BlobWriter w, byte[] bytes) throws IOException {
    int pos = 0;
    int piece = 1;
    while (pos < bytes.length) {
      int n = Math.min(piece, bytes.length - pos);
      int half = n / 2;
      ByteString s = ByteString.fromArray(bytes, pos, half)
          .concat(ByteString.fromArray(bytes, pos + half, n - half));
      w.write(s);
      pos += n;
      piece = piece * 3 + 7;
    }
  }

  private ByteString collect(DiskStore store, StoredArtifact a, long offset, long length)
      throws Exception {
    CompletableFuture<ByteString> f =
        store.read(a, offset, length)
            .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), system)
            .toCompletableFuture();
    return f.get(10, TimeUnit.SECONDS);
  }

  /** Files two levels under dir (the fan-out layout), or directly under it for tmp/. */
  private static List<Path> list(Path dir) throws IOException {
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(Files::isRegularFile).sorted().collect(Collectors.toList());
    }
  }

  private static byte[] randomBytes(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed * 31 + n).nextBytes(b);
    return b;
  }

  private static byte[] bytes(String s) {
    return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private static byte[] slice(byte[] b, int from, int len) {
    byte[] out = new byte[len];
    System.arraycopy(b, from, out, 0, len);
    return out;
  }

  private static String sha256Hex(byte[] b) {
    return hex("SHA-256", b);
  }

  private static String hex(String algorithm, byte[] b) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(b));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** A clock the test moves by hand. */
  static final class ManualClock extends Clock {
    private final AtomicLong millis;

    ManualClock(long millis) {
      this.millis = new AtomicLong(millis);
    }

    void advance(long by) {
      millis.addAndGet(by);
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return this;
    }

    @Override
    public Instant instant() {
      return Instant.ofEpochMilli(millis.get());
    }

    @Override
    public long millis() {
      return millis.get();
    }
  }
}
