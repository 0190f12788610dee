package dev.corral.core.store;

/**
 * Each blob the index refers to, by SHA-256: its size and how many keys refer to it (identical
 * content is stored once, whatever the number of keys). Like {@link KeyIndex}, rows in primitive
 * arrays and an open-addressing table of row numbers, rather than a map entry, a count object and
 * a SHA-256 string a blob. SHA-256s are 64 lower-case hex digits; any other string is never
 * counted. Not thread-safe: the store's lock guards it.
 */
final class BlobCounts {
  private static final int NONE = -1;

  private long[] shas;
  private long[] sizes;
  private int[] refs; // a free row holds the next free row's number here
  private int rows;
  private int freeRow = NONE;
  private int count;
  /** Open addressing, linear probing: row + 1, or 0; at most half full. */
  private int[] table;

  BlobCounts(int expected) {
    int n = Math.max(16, expected);
    shas = new long[4 * n];
    sizes = new long[n];
    refs = new int[n];
    table = new int[Integer.highestOneBit(n) << 2];
  }

  /** How many blobs are counted. */
  int size() {
    return count;
  }

  boolean contains(String sha256) {
    return sizeOf(sha256) >= 0;
  }

  /** The blob's size, or -1 when no key refers to it. */
  long sizeOf(String sha256) {
    long[] q = new long[4];
    if (!KeyIndex.parseHex(sha256, q)) {
      return -1;
    }
    int e = table[place(q, 0)];
    return e == 0 ? -1 : sizes[e - 1];
  }

  /** One more key refers to the blob; returns its size when it was not counted yet, else 0. */
  long reference(String sha256, long size) {
    long[] q = new long[4];
    if (!KeyIndex.parseHex(sha256, q)) {
      throw new IllegalArgumentException("not a SHA-256: " + sha256);
    }
    return reference(q, 0, size);
  }

  /** The same for the SHA-256 held as four longs from {@code at} in {@code sha}. */
  long reference(long[] sha, int at, long size) {
    int p = place(sha, at);
    if (table[p] != 0) {
      refs[table[p] - 1]++;
      return 0;
    }
    int r = newRow();
    System.arraycopy(sha, at, shas, 4 * r, 4);
    sizes[r] = size;
    refs[r] = 1;
    table[p] = r + 1;
    count++;
    growIfFull();
    return size;
  }

  /**
   * One key less refers to the blob: returns its size when that was the last (it is no longer
   * counted), else -1 (also when it was not counted).
   */
  long release(String sha256) {
    long[] q = new long[4];
    if (!KeyIndex.parseHex(sha256, q)) {
      return -1;
    }
    int p = place(q, 0);
    if (table[p] == 0) {
      return -1;
    }
    int r = table[p] - 1;
    if (--refs[r] > 0) {
      return -1;
    }
    unplace(p);
    refs[r] = freeRow;
    freeRow = r;
    count--;
    return sizes[r];
  }

  private int newRow() {
    if (freeRow != NONE) {
      int r = freeRow;
      freeRow = refs[r];
      return r;
    }
    if (rows == sizes.length) {
      int n = sizes.length + (sizes.length >> 1) + 1;
      shas = java.util.Arrays.copyOf(shas, 4 * n);
      sizes = java.util.Arrays.copyOf(sizes, n);
      refs = java.util.Arrays.copyOf(refs, n);
    }
    return rows++;
  }

  private int place(long[] q, int at) {
    int mask = table.length - 1;
    int i = home(q[at], mask);
    while (true) {
      int e = table[i];
      if (e == 0) {
        return i;
      }
      int r = 4 * (e - 1);
      if (shas[r] == q[at] && shas[r + 1] == q[at + 1] && shas[r + 2] == q[at + 2] && shas[r + 3] == q[at + 3]) {
        return i;
      }
      i = (i + 1) & mask;
    }
  }

  private static int home(long firstLong, int mask) {
    return (int) (firstLong ^ (firstLong >>> 32)) & mask;
  }

  private void unplace(int i) {
    int mask = table.length - 1;
    int j = i;
    while (true) {
      j = (j + 1) & mask;
      int e = table[j];
      if (e == 0) {
        break;
      }
      int k = home(shas[4 * (e - 1)], mask);
      boolean stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (!stays) {
        table[i] = e;
        i = j;
      }
    }
    table[i] = 0;
  }

  private void growIfFull() {
    if (count * 2 <= table.length) {
      return;
    }
    int[] bigger = new int[table.length * 2];
    int mask = bigger.length - 1;
    for (int e : table) {
      if (e != 0) {
        int i = home(shas[4 * (e - 1)], mask);
        while (bigger[i] != 0) {
          i = (i + 1) & mask;
        }
        bigger[i] = e;
      }
    }
    table = bigger;
  }
}
