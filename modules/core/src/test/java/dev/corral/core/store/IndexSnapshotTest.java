package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.zip.CRC32;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/**
 * The index snapshot (issue 14 item 7): a clean close leaves the whole index, in LRU order, for
 * the next open to load instead of reading every key record; anything else (a crash, a change
 * after the close, a damaged file) makes the open rebuild from the key records, losing nothing.
 */
class IndexSnapshotTest {
  private static final long BIG = Long.MAX_VALUE;
  private static final List<Header> PLAIN = List.of(new Header("Content-Type", "application/octet-stream"));

  @TempDir Path dir;
  private final DiskStoreTest.ManualClock clock = new DiskStoreTest.ManualClock(1_000_000L);
  private final ListAppender<ILoggingEvent> log = new ListAppender<>();
  private final Logger storeLog = (Logger) LoggerFactory.getLogger(DiskStore.class);

  @BeforeEach
  void listen() {
    log.start();
    storeLog.addAppender(log);
  }

  @AfterEach
  void stopListening() {
    storeLog.detachAppender(log);
  }

  @Test
  void aCleanCloseThenOpenRestoresEveryKeyAndTheLruOrderWithoutReadingTheKeyRecords() throws IOException {
    DiskStore store = open(BIG);
    Map<String, StoredArtifact> committed = new LinkedHashMap<>();
    for (int i = 0; i < 12; i++) {
      clock.advance(1);
      StoredArtifact a = put(store, key("k" + i), ("bytes of k" + i).getBytes(StandardCharsets.UTF_8), headers(i));
      committed.put(a.keyId(), a);
    }
    put(store, key("same-as-k1"), "bytes of k1".getBytes(StandardCharsets.UTF_8), headers(1)); // a shared blob
    committed.put(key("same-as-k1").id(), store.held(key("same-as-k1").id()).orElseThrow());
    // Recency differs from fetch order: k3 and k0 were used last, k7 was revalidated.
    store.lookup(key("k3"));
    store.touch(key("k7"), List.of(new Header("ETag", "\"v2\"")), 5L);
    store.lookup(key("k0"));
    committed.put(key("k7").id(), store.held(key("k7").id()).orElseThrow());
    List<String> order = store.keyIdsEldestFirst();
    long total = store.totalSize();
    store.close();
    assertTrue(Files.exists(snapshot()));

    // Key records damaged after the close: a rebuild would drop these two keys, the snapshot has them.
    Files.writeString(store.recordPath(key("k5").id()), "{not json");
    Files.delete(store.recordPath(key("k6").id()));

    DiskStore reopened = open(BIG);
    assertTrue(reopened.openedFromSnapshot());
    assertFalse(Files.exists(snapshot()), "consumed by the open");
    assertEquals(order, reopened.keyIdsEldestFirst(), "the same LRU order, eldest first");
    assertEquals(committed.size(), reopened.keyCount());
    assertEquals(total, reopened.totalSize());
    for (StoredArtifact a : committed.values()) {
      assertEquals(Optional.of(a), reopened.held(a.keyId()), a.key());
    }
    assertArrayEquals("bytes of k1".getBytes(StandardCharsets.UTF_8),
        reopened.readAll(reopened.lookup(key("same-as-k1")).orElseThrow()).toArray());
  }

  @Test
  void theLeastRecentlyUsedKeyIsEvictedFirstAfterACleanRestartNotTheOldestFetch() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("old"), new byte[100], PLAIN);
    clock.advance(1000);
    put(store, key("new"), new byte[100 + 1], PLAIN);
    store.lookup(key("old")); // used after "new": "new" is the least recently used
    store.close();

    DiskStore reopened = open(150); // room for one of them
    assertTrue(reopened.openedFromSnapshot());
    assertTrue(reopened.lookup(key("new")).isEmpty());
    assertTrue(reopened.lookup(key("old")).isPresent());
  }

  @Test
  void anOpenAfterACrashRebuildsFromTheKeyRecords() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), bytes("a"), PLAIN);
    // no close: the process died

    DiskStore reopened = open(BIG);
    assertFalse(reopened.openedFromSnapshot());
    assertEquals(Optional.of(a), reopened.held(a.keyId()));
    assertTrue(warnings().isEmpty(), "a missing snapshot is the normal case after a crash: " + warnings());
  }

  @Test
  void theSnapshotIsConsumedAtOpenSoACrashAfterChangesRebuilds() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), bytes("a"), PLAIN);
    StoredArtifact gone = put(store, key("gone"), bytes("gone"), PLAIN);
    store.close();

    DiskStore second = open(BIG);
    assertTrue(second.openedFromSnapshot());
    StoredArtifact b = put(second, key("b"), bytes("b"), PLAIN);
    second.remove(key("gone"));
    // no close: the process died

    DiskStore third = open(BIG);
    assertFalse(third.openedFromSnapshot(), "the first snapshot was used up; a crash leaves none");
    assertEquals(Optional.of(a), third.held(a.keyId()));
    assertEquals(Optional.of(b), third.held(b.keyId()));
    assertTrue(third.held(gone.keyId()).isEmpty());
  }

  @Test
  void aCommitAfterTheCloseDeletesTheSnapshotSoTheNextOpenRebuilds() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("a"), bytes("a"), PLAIN);
    store.close();
    StoredArtifact late = put(store, key("late"), bytes("late"), PLAIN); // a replica arriving during shutdown
    assertFalse(Files.exists(snapshot()));

    DiskStore reopened = open(BIG);
    assertFalse(reopened.openedFromSnapshot());
    assertEquals(Optional.of(late), reopened.held(late.keyId()));
  }

  @Test
  void aRemovalOrTouchAfterTheCloseDeletesTheSnapshotToo() throws IOException {
    DiskStore store = open(BIG);
    put(store, key("a"), bytes("a"), PLAIN);
    put(store, key("b"), bytes("b"), PLAIN);
    store.close();
    store.remove(key("a"));
    assertFalse(Files.exists(snapshot()), "after a removal");
    store.close();
    store.touch(key("b"), List.of(new Header("ETag", "\"b2\"")), 7L);
    assertFalse(Files.exists(snapshot()), "after a revalidation");

    DiskStore reopened = open(BIG);
    assertFalse(reopened.openedFromSnapshot());
    assertTrue(reopened.held(key("a").id()).isEmpty());
    assertEquals(7L, reopened.held(key("b").id()).orElseThrow().fetchedAtMillis());
  }

  @Test
  void aTruncatedSnapshotIsRefusedWithAWarningAndNothingIsLost() throws IOException {
    Map<String, StoredArtifact> committed = storeClosedWithKeys(20);
    byte[] whole = Files.readAllBytes(snapshot());
    Files.write(snapshot(), java.util.Arrays.copyOf(whole, whole.length - 7));
    assertRebuiltWithWarning(committed, "truncated");
  }

  @Test
  void aFlippedByteIsCaughtByTheChecksum() throws IOException {
    Map<String, StoredArtifact> committed = storeClosedWithKeys(20);
    byte[] bytes = Files.readAllBytes(snapshot());
    bytes[16 + 4 + 32 + 5] ^= 0x10; // in the first entry's SHA-256: still parses, names another blob
    Files.write(snapshot(), bytes);
    assertRebuiltWithWarning(committed, "checksum");
  }

  @Test
  void aSnapshotOfAnotherVersionIsRefusedEvenWithAValidChecksum() throws IOException {
    Map<String, StoredArtifact> committed = storeClosedWithKeys(5);
    byte[] bytes = Files.readAllBytes(snapshot());
    ByteBuffer.wrap(bytes).putInt(4, IndexSnapshot.VERSION + 1);
    CRC32 crc = new CRC32();
    crc.update(bytes, 0, bytes.length - 4);
    ByteBuffer.wrap(bytes).putInt(bytes.length - 4, (int) crc.getValue());
    Files.write(snapshot(), bytes);
    assertRebuiltWithWarning(committed, "version");
  }

  @Test
  void bytesAfterTheChecksumAreRefused() throws IOException {
    Map<String, StoredArtifact> committed = storeClosedWithKeys(5);
    Files.write(snapshot(), new byte[] {0}, java.nio.file.StandardOpenOption.APPEND);
    assertRebuiltWithWarning(committed, "after the checksum");
  }

  @Test
  void aSnapshotKeyWhoseBlobIsGoneIsDroppedOnReadAndReportedAsEvicted() throws Exception {
    DiskStore store = open(BIG);
    StoredArtifact looked = put(store, key("looked-up"), bytes("looked-up"), PLAIN);
    StoredArtifact read = put(store, key("read"), bytes("read"), PLAIN);
    StoredArtifact kept = put(store, key("kept"), bytes("kept"), PLAIN);
    store.close();
    Files.delete(store.blobPath(looked.sha256()));
    Files.delete(store.blobPath(read.sha256()));

    DiskStore reopened = open(BIG);
    assertTrue(reopened.openedFromSnapshot(), "the open looks at no blob");
    assertEquals(3, reopened.keyCount());
    List<String> evicted = new CopyOnWriteArrayList<>();
    reopened.onEvicted(evicted::add);

    assertTrue(reopened.lookup(key("looked-up")).isEmpty());
    assertEquals(List.of(looked.keyId()), evicted);
    assertFalse(Files.exists(reopened.recordPath(looked.keyId())));

    StoredArtifact indexed = reopened.indexed(key("read")).orElseThrow(); // a hit that skips the blob check
    assertThrows(IOException.class, () -> reopened.readAll(indexed));
    assertEquals(List.of(looked.keyId(), read.keyId()), evicted);
    assertTrue(reopened.held(read.keyId()).isEmpty());

    assertEquals(Optional.of(kept), reopened.lookup(key("kept")));
    assertEquals(1, reopened.keyCount());
    assertEquals(kept.size(), reopened.totalSize());
  }

  @Test
  void aBlobCorruptedWhileTheNodeWasDownIsCaughtOnItsFirstRead() throws IOException {
    DiskStore store = open(BIG);
    StoredArtifact a = put(store, key("a"), bytes("abcdef"), PLAIN);
    store.close();
    Files.write(store.blobPath(a.sha256()), bytes("abcdeF")); // same size

    DiskStore reopened = open(BIG);
    assertTrue(reopened.openedFromSnapshot());
    assertThrows(IOException.class, () -> reopened.readAll(reopened.lookup(key("a")).orElseThrow()));
    assertTrue(reopened.lookup(key("a")).isEmpty());
    assertFalse(Files.exists(reopened.blobPath(a.sha256())));
  }

  // ---------------------------------------------------------------------------------------------

  private Map<String, StoredArtifact> storeClosedWithKeys(int n) throws IOException {
    DiskStore store = open(BIG);
    Map<String, StoredArtifact> committed = new LinkedHashMap<>();
    for (int i = 0; i < n; i++) {
      clock.advance(1);
      StoredArtifact a = put(store, key("k" + i), bytes("k" + i), headers(i));
      committed.put(a.keyId(), a);
    }
    store.close();
    assertTrue(Files.exists(snapshot()));
    return committed;
  }

  private void assertRebuiltWithWarning(Map<String, StoredArtifact> committed, String reason) throws IOException {
    DiskStore reopened = open(BIG);
    assertFalse(reopened.openedFromSnapshot());
    assertFalse(Files.exists(snapshot()), "a refused snapshot is deleted too");
    List<String> warned = warnings();
    assertEquals(1, warned.size(), warned.toString());
    assertTrue(warned.get(0).contains("index snapshot") && warned.get(0).contains(reason), warned.get(0));
    assertEquals(committed.size(), reopened.keyCount());
    for (StoredArtifact a : committed.values()) {
      assertEquals(Optional.of(a), reopened.held(a.keyId()));
      assertArrayEquals(Files.readAllBytes(reopened.blobPath(a.sha256())), reopened.readAll(a).toArray());
    }
  }

  private List<String> warnings() {
    List<String> out = new ArrayList<>();
    // This thread's only: other classes' stores log on the same logger when they run alongside.
    for (ILoggingEvent e : log.list) {
      if (e.getLevel().isGreaterOrEqual(Level.WARN) && e.getThreadName().equals(Thread.currentThread().getName())) {
        out.add(e.getFormattedMessage());
      }
    }
    return out;
  }

  /** Headers of several kinds: shared, unique per key, none, and not ASCII. */
  private static List<Header> headers(int i) {
    return switch (i % 4) {
      case 0 -> PLAIN;
      case 1 -> List.of(new Header("Content-Type", "application/java-archive"), new Header("ETag", "\"e" + i + "\""));
      case 2 -> List.of();
      default -> List.of(new Header("Content-Disposition", "attachment; filename=\"süß-" + i + ".txt\""),
          new Header("Last-Modified", "Sat, 05 Dec 2026 10:00:0" + (i % 10) + " GMT"));
    };
  }

  private Path snapshot() {
    return dir.resolve(IndexSnapshot.FILE_NAME);
  }

  private DiskStore open(long max) throws IOException {
    return DiskStore.open(dir, max, clock);
  }

  private static ArtifactKey key(String name) {
    return ArtifactKey.of("repo", "http://upstream.example/" + name);
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static StoredArtifact put(DiskStore store, ArtifactKey key, byte[] bytes, List<Header> headers)
      throws IOException {
    try (BlobWriter w = store.newBlob(null)) {
      w.write(ByteString.fromArray(bytes));
      return store.commit(key, w, headers);
    }
  }
}
