package dev.corral.core.store;

import dev.corral.core.upstream.Header;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The store's index: every key held, in exact least-recently-used order, with what is stored for
 * it. A million keys make a million entries, so an entry is not a handful of objects (a map entry,
 * a record, a key id string and a SHA-256 string: about 490 bytes and 10 objects, which the
 * collector had to copy as the index loaded) but one row across a few primitive arrays: the key id
 * and the blob's SHA-256 as four longs each, size, fetch and last-use times, the LRU links as
 * row numbers, and a table of row numbers keyed by the key id ({@link RowTable}). Only the
 * canonical key (as UTF-8 bytes) and the header list (shared between keys, {@link SharedHeaders})
 * are objects. A {@link StoredArtifact} is built when one is asked for.
 *
 * <p>Key ids and SHA-256s are 64 lower-case hex digits; a key id that is not one is simply not
 * held. Not thread-safe: the store's lock guards it.
 */
final class KeyIndex {
  private static final int NONE = -1;
  /** Rows at most: four longs a row must fit one array, and the table twice the rows. */
  static final int MAX_ROWS = 1 << 28;
  private static final byte[] DIGITS = "0123456789abcdef".getBytes(StandardCharsets.ISO_8859_1);

  // One row per slot; a free slot is chained through next[].
  private long[] ids;
  private long[] shas;
  private long[] sizes;
  private long[] fetchedAts;
  private long[] usedAts;
  private byte[][] keys; // UTF-8: a String would add its own 24 bytes a key
  private Object[] headers;
  private int[] prev;
  private int[] next;
  private int slots; // slots ever used (the high-water mark)
  private int freeSlot = NONE;
  private int eldest = NONE;
  private int newest = NONE;
  private int size;

  /** The rows by key id. */
  private final RowTable table;

  /** An index with room for {@code expected} keys before it grows. */
  KeyIndex(int expected) {
    int rows = Math.max(16, Math.min(expected, MAX_ROWS));
    ids = new long[rows * 4];
    shas = new long[rows * 4];
    sizes = new long[rows];
    fetchedAts = new long[rows];
    usedAts = new long[rows];
    keys = new byte[rows][];
    headers = new Object[rows];
    prev = new int[rows];
    next = new int[rows];
    table = new RowTable(rows);
  }

  int size() {
    return size;
  }

  /** Whether the key is held; its place in the order stays. */
  boolean contains(String keyId) {
    return find(keyId) != NONE;
  }

  /** The key's artifact, moved to the newest end (its last use stays); null when not held. */
  StoredArtifact get(String keyId) {
    int s = find(keyId);
    if (s == NONE) {
      return null;
    }
    moveToNewest(s);
    return artifact(s, keyId);
  }

  /**
   * The key's artifact, moved to the newest end and used at {@code nowMillis}; null when not held.
   * {@code key} is the canonical key whose id {@code keyId} is, or null: given, a hit decodes no
   * copy of it from the row.
   */
  StoredArtifact use(String keyId, String key, long nowMillis) {
    int s = find(keyId);
    if (s == NONE) {
      return null;
    }
    moveToNewest(s);
    usedAts[s] = nowMillis;
    return artifact(s, keyId, key);
  }

  /**
   * Holds {@code artifact} for its key as the newest, last used at {@code usedAtMillis}; returns what
   * it replaces, or null.
   *
   * @throws IllegalArgumentException if its key id or SHA-256 is not 64 lower-case hex digits
   */
  StoredArtifact put(StoredArtifact artifact, long usedAtMillis) {
    long[] id = new long[4];
    long[] sha = new long[4];
    if (!parseHex(artifact.keyId(), id) || !parseHex(artifact.sha256(), sha)) {
      throw new IllegalArgumentException("not a key id and a SHA-256: " + artifact.keyId() + ", " + artifact.sha256());
    }
    byte[] key = artifact.key().getBytes(StandardCharsets.UTF_8);
    int s = table.rowAt(table.place(ids, id, 0));
    if (s == NONE) {
      addNewest(id, sha, artifact.size(), artifact.fetchedAtMillis(), usedAtMillis, key, artifact.headers());
      return null;
    }
    StoredArtifact previous = artifact(s, artifact.keyId());
    moveToNewest(s);
    fill(s, sha, artifact.size(), artifact.fetchedAtMillis(), usedAtMillis, key, artifact.headers());
    return previous;
  }

  /**
   * Adds a key not held yet as the newest, from its raw fields (the snapshot's load: no strings
   * made for the ids). Returns false, changing nothing, when the key is already held.
   */
  boolean addNewest(long[] id, long[] sha, long blobSize, long fetchedAtMillis, long usedAtMillis,
      byte[] key, List<Header> headerList) {
    int place = table.place(ids, id, 0);
    if (table.rowAt(place) != NONE) {
      return false;
    }
    int s = newRow();
    System.arraycopy(id, 0, ids, 4 * s, 4);
    table.put(ids, place, s);
    fill(s, sha, blobSize, fetchedAtMillis, usedAtMillis, key, headerList);
    linkNewest(s);
    size++;
    return true;
  }

  private void fill(int s, long[] sha, long blobSize, long fetchedAtMillis, long usedAtMillis, byte[] key,
      List<Header> headerList) {
    System.arraycopy(sha, 0, shas, 4 * s, 4);
    sizes[s] = blobSize;
    fetchedAts[s] = fetchedAtMillis;
    usedAts[s] = usedAtMillis;
    keys[s] = key;
    headers[s] = headerList;
  }

  /** Stops holding the key; returns what it held, or null. */
  StoredArtifact remove(String keyId) {
    int s = find(keyId);
    if (s == NONE) {
      return null;
    }
    StoredArtifact removed = artifact(s, keyId);
    removeRow(s);
    return removed;
  }

  /** The ids of the keys whose blob is one of {@code sha256s}, eldest first, in one walk. */
  List<String> keyIdsOnBlobs(java.util.Collection<String> sha256s) {
    BlobCounts wanted = new BlobCounts(sha256s.size());
    long[] sha = new long[4];
    for (String s : sha256s) {
      if (parseHex(s, sha)) {
        wanted.reference(sha, 0, 0);
      }
    }
    List<String> out = new ArrayList<>();
    if (wanted.size() == 0) {
      return out;
    }
    for (int s = eldest; s != NONE; s = next[s]) {
      if (wanted.contains(shas, 4 * s)) {
        out.add(hex(ids, 4 * s));
      }
    }
    return out;
  }

  /** Counts one reference to its blob per key held, in {@code blobs}; returns the bytes that added. */
  long referenceAll(BlobCounts blobs) {
    long added = 0;
    for (int s = eldest; s != NONE; s = next[s]) {
      added += blobs.reference(shas, 4 * s, sizes[s]);
    }
    return added;
  }

  /** A cursor over the keys, eldest first; it reorders nothing. */
  Cursor eldestFirst() {
    return new Cursor();
  }

  /**
   * Walks the keys from the least recently used to the newest. {@link #remove} takes the current
   * key out and the walk goes on from the next; any other change to the index meanwhile leaves
   * the walk undefined.
   */
  final class Cursor {
    private int current = NONE;
    private int following = eldest;

    /** Moves to the next key; false when there is none. */
    boolean next() {
      current = following;
      if (current == NONE) {
        return false;
      }
      following = KeyIndex.this.next[current];
      return true;
    }

    String keyId() {
      return hex(ids, 4 * current);
    }

    StoredArtifact artifact() {
      return KeyIndex.this.artifact(current, keyId());
    }

    long usedAtMillis() {
      return usedAts[current];
    }

    long size() {
      return sizes[current];
    }

    long fetchedAtMillis() {
      return fetchedAts[current];
    }

    String key() {
      return new String(keys[current], StandardCharsets.UTF_8);
    }

    /** The canonical key as UTF-8; not to be changed. */
    byte[] keyBytes() {
      return keys[current];
    }

    @SuppressWarnings("unchecked")
    List<Header> headers() {
      return (List<Header>) headers[current];
    }

    /** The i-th long (0-3) of the key id, big-endian. */
    long idLong(int i) {
      return ids[4 * current + i];
    }

    /** The i-th long (0-3) of the SHA-256, big-endian. */
    long shaLong(int i) {
      return shas[4 * current + i];
    }

    /** Stops holding the current key; returns what it held. */
    StoredArtifact remove() {
      StoredArtifact removed = artifact();
      removeRow(current);
      current = NONE;
      return removed;
    }
  }

  // ---- rows ---------------------------------------------------------------------------------------

  private StoredArtifact artifact(int s, String keyId) {
    return artifact(s, keyId, null);
  }

  @SuppressWarnings("unchecked")
  private StoredArtifact artifact(int s, String keyId, String key) {
    return new StoredArtifact(keyId, key != null ? key : new String(keys[s], StandardCharsets.UTF_8), hex(shas, 4 * s),
        sizes[s], (List<Header>) headers[s], fetchedAts[s]);
  }

  private int newRow() {
    if (freeSlot != NONE) {
      int s = freeSlot;
      freeSlot = next[s];
      return s;
    }
    if (slots == sizes.length) {
      int rows = (int) Math.min(MAX_ROWS, sizes.length + (sizes.length >> 1) + 1L);
      if (rows == sizes.length) {
        throw new IllegalStateException("the store's index holds at most " + MAX_ROWS + " keys");
      }
      ids = Arrays.copyOf(ids, rows * 4);
      shas = Arrays.copyOf(shas, rows * 4);
      sizes = Arrays.copyOf(sizes, rows);
      fetchedAts = Arrays.copyOf(fetchedAts, rows);
      usedAts = Arrays.copyOf(usedAts, rows);
      keys = Arrays.copyOf(keys, rows);
      headers = Arrays.copyOf(headers, rows);
      prev = Arrays.copyOf(prev, rows);
      next = Arrays.copyOf(next, rows);
    }
    return slots++;
  }

  private void removeRow(int s) {
    table.remove(ids, table.place(ids, ids, 4 * s));
    unlink(s);
    keys[s] = null;
    headers[s] = null;
    next[s] = freeSlot;
    freeSlot = s;
    size--;
  }

  private void linkNewest(int s) {
    prev[s] = newest;
    next[s] = NONE;
    if (newest == NONE) {
      eldest = s;
    } else {
      next[newest] = s;
    }
    newest = s;
  }

  private void unlink(int s) {
    int p = prev[s];
    int n = next[s];
    if (p == NONE) {
      eldest = n;
    } else {
      next[p] = n;
    }
    if (n == NONE) {
      newest = p;
    } else {
      prev[n] = p;
    }
  }

  private void moveToNewest(int s) {
    if (s != newest) {
      unlink(s);
      linkNewest(s);
    }
  }

  // ---- the table ----------------------------------------------------------------------------------

  /** The row of the key, or NONE (also for a string that is not a key id). */
  private int find(String keyId) {
    long[] id = new long[4];
    if (keyId == null || !parseHex(keyId, id)) {
      return NONE;
    }
    return table.rowAt(table.place(ids, id, 0));
  }

  // ---- hex ----------------------------------------------------------------------------------------

  /** Parses 64 lower-case hex digits into four big-endian longs; false if {@code s} is not that. */
  static boolean parseHex(String s, long[] into) {
    if (s.length() != 64) {
      return false;
    }
    for (int l = 0; l < 4; l++) {
      long v = 0;
      for (int c = 16 * l, end = c + 16; c < end; c++) {
        char ch = s.charAt(c);
        int d;
        if (ch >= '0' && ch <= '9') {
          d = ch - '0';
        } else if (ch >= 'a' && ch <= 'f') {
          d = ch - 'a' + 10;
        } else {
          return false;
        }
        v = (v << 4) | d;
      }
      into[l] = v;
    }
    return true;
  }

  /** Four big-endian longs from {@code at} as 64 lower-case hex digits. */
  static String hex(long[] longs, int at) {
    byte[] out = new byte[64];
    for (int l = 0; l < 4; l++) {
      long v = longs[at + l];
      for (int c = 16 * l + 15; c >= 16 * l; c--) {
        out[c] = DIGITS[(int) (v & 0xF)];
        v >>>= 4;
      }
    }
    return new String(out, StandardCharsets.ISO_8859_1);
  }
}
