package dev.corral.core.store;

/**
 * The hash table of {@link KeyIndex} and {@link BlobCounts}: row numbers placed by open addressing
 * with linear probing, keyed by the four longs (a SHA-256, whose first long is already well
 * spread) that the owner keeps for each row in {@code keys}, from {@code 4 * row}. At most half
 * full; a removal shifts the entries after it back, so no tombstones build up. Not thread-safe.
 *
 * <p>A key id is the SHA-256 of a URL that clients choose, so ids whose low bits collide can be
 * searched for offline; a place is therefore taken from the high bits of the first long mixed
 * with a secret drawn once per process, which no client can aim at. The mix is a full 64-bit
 * finaliser (MurmurHash3's fmix64): one multiplication after the XOR, as before 2026-12-07, left
 * structured ids bunched for some secrets (2,000 chosen ids at 1,458 places of 16,384 in a CI
 * run; about 1 secret in 150), where the finaliser keeps them near the 1,880 of random ones.
 */
final class RowTable {
  private static final long SECRET = new java.security.SecureRandom().nextLong();
  private int[] table; // row + 1, or 0 for an empty place
  private int shift; // 64 - log2(table.length)
  private int count;

  /** A table for {@code rows} rows before it grows. */
  RowTable(int rows) {
    int n = Integer.highestOneBit(Math.max(16, rows)) << 2; // more than twice the rows
    if (n <= 0) {
      throw new IllegalStateException("too many rows for one table: " + rows);
    }
    table = new int[n];
    shift = 64 - Integer.numberOfTrailingZeros(n);
  }

  /** Where the key held as four longs from {@code at} in {@code q} is, or the empty place it would take. */
  int place(long[] keys, long[] q, int at) {
    int mask = table.length - 1;
    int i = home(q[at], shift);
    while (true) {
      int e = table[i];
      if (e == 0) {
        return i;
      }
      int r = 4 * (e - 1);
      if (keys[r] == q[at] && keys[r + 1] == q[at + 1] && keys[r + 2] == q[at + 2] && keys[r + 3] == q[at + 3]) {
        return i;
      }
      i = (i + 1) & mask;
    }
  }

  /** Where a search for a key whose first long is {@code firstLong} starts (tests). */
  int homeOf(long firstLong) {
    return home(firstLong, shift);
  }

  /** The row at {@code place}, or -1 when it is empty. */
  int rowAt(int place) {
    return table[place] - 1;
  }

  /** Puts {@code row} at the empty {@code place} that {@link #place} gave for its key. */
  void put(long[] keys, int place, int row) {
    table[place] = row + 1;
    if (++count * 2 > table.length) {
      grow(keys);
    }
  }

  /** Empties {@code place}, moving back the entries of its run that would no longer be found. */
  void remove(long[] keys, int place) {
    int mask = table.length - 1;
    int i = place;
    int j = i;
    while (true) {
      j = (j + 1) & mask;
      int e = table[j];
      if (e == 0) {
        break;
      }
      int k = home(keys[4 * (e - 1)], shift);
      // The entry at j stays when its home lies cyclically in (i, j].
      boolean stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
      if (!stays) {
        table[i] = e;
        i = j;
      }
    }
    table[i] = 0;
    count--;
  }

  private void grow(long[] keys) {
    int[] bigger = new int[table.length * 2];
    int mask = bigger.length - 1;
    int biggerShift = shift - 1;
    for (int e : table) {
      if (e != 0) {
        int i = home(keys[4 * (e - 1)], biggerShift);
        while (bigger[i] != 0) {
          i = (i + 1) & mask;
        }
        bigger[i] = e;
      }
    }
    table = bigger;
    shift = biggerShift;
  }

  /** The place a key starts its search at: the top bits of its first long, mixed with the secret. */
  private static int home(long firstLong, int shift) {
    return home(firstLong, SECRET, shift);
  }

  /** As above with {@code secret} (tests try many). */
  static int home(long firstLong, long secret, int shift) {
    long z = firstLong ^ secret;
    z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
    z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
    return (int) ((z ^ (z >>> 33)) >>> shift);
  }
}
