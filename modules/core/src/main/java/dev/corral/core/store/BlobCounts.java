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
  /** The rows by SHA-256. */
  private final RowTable table;

  BlobCounts(int expected) {
    int n = Math.max(16, Math.min(expected, KeyIndex.MAX_ROWS));
    shas = new long[4 * n];
    sizes = new long[n];
    refs = new int[n];
    table = new RowTable(n);
  }

  /** How many blobs are counted. */
  int size() {
    return count;
  }

  boolean contains(String sha256) {
    return sizeOf(sha256) >= 0;
  }

  /** Whether the SHA-256 held as four longs from {@code at} in {@code sha} is counted. */
  boolean contains(long[] sha, int at) {
    return table.rowAt(place(sha, at)) >= 0;
  }

  /** The blob's size, or -1 when no key refers to it. */
  long sizeOf(String sha256) {
    long[] q = new long[4];
    if (!KeyIndex.parseHex(sha256, q)) {
      return -1;
    }
    int r = table.rowAt(place(q, 0));
    return r < 0 ? -1 : sizes[r];
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
    int known = table.rowAt(p);
    if (known >= 0) {
      refs[known]++;
      return 0;
    }
    int r = newRow();
    System.arraycopy(sha, at, shas, 4 * r, 4);
    sizes[r] = size;
    refs[r] = 1;
    table.put(shas, p, r);
    count++;
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
    int r = table.rowAt(p);
    if (r < 0) {
      return -1;
    }
    if (--refs[r] > 0) {
      return -1;
    }
    table.remove(shas, p);
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
      int n = (int) Math.min(KeyIndex.MAX_ROWS, sizes.length + (sizes.length >> 1) + 1L);
      if (n == sizes.length) {
        throw new IllegalStateException("the store counts at most " + n + " blobs");
      }
      shas = java.util.Arrays.copyOf(shas, 4 * n);
      sizes = java.util.Arrays.copyOf(sizes, n);
      refs = java.util.Arrays.copyOf(refs, n);
    }
    return rows++;
  }

  private int place(long[] q, int at) {
    return table.place(shas, q, at);
  }
}
