package dev.corral.core.store;

import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32;

/**
 * The store's whole index in one file, written by a clean {@link DiskStore#close} and read by the
 * next open instead of every key record (issue 14 item 7: a million keys are read in about a
 * second, not forty). Binary, big-endian:
 *
 * <pre>
 *   int  magic 0x43524958 ("CRIX")   int version (2)   long entry count
 *   per entry, eldest (least recently used) first:
 *     int  length of the rest of the entry
 *     32 bytes key id   32 bytes SHA-256   long size   long fetched-at millis   long used-at millis
 *     string key (canonical form)   unsigned short header count   per header: string name, string value
 *     (a string: int byte count, then UTF-8)
 *   int  CRC32 of every byte before it
 * </pre>
 *
 * Version 1 had no used-at time: its keys are read as used at the open. Nothing may follow the
 * checksum. Any deviation (a short file, a bad checksum, an unknown
 * version, an entry that does not add up) makes {@link #read} throw {@link Invalid}, and the store
 * rebuilds its index from the key records instead.
 */
final class IndexSnapshot {
  static final String FILE_NAME = "index.snapshot";
  static final int MAGIC = 0x43524958;
  static final int VERSION = 2;
  private static final int BUFFER = 1 << 20;
  /** No entry is longer (an index holding one is not snapshotted: the next open rebuilds). */
  static final int MAX_ENTRY = BUFFER - 4;

  private IndexSnapshot() {}

  /** A snapshot that must not be trusted; the message says why. */
  static final class Invalid extends Exception {
    Invalid(String message) {
      super(message);
    }
  }

  /**
   * Writes {@code entries} in their iteration order to {@code temp} (which must not exist),
   * fsyncs it and renames it to {@code target}, then fsyncs {@code target}'s directory.
   */
  static void write(Path temp, Path target, KeyIndex entries) throws IOException {
    CRC32 crc = new CRC32();
    try (FileChannel ch = FileChannel.open(temp,
        Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE), OwnerOnly.file(temp))) {
      ByteBuffer buf = ByteBuffer.allocate(BUFFER);
      buf.putInt(MAGIC).putInt(VERSION).putLong(entries.size());
      KeyIndex.Cursor e = entries.eldestFirst();
      while (e.next()) {
        byte[] key = e.keyBytes();
        List<Header> headerList = e.headers();
        byte[][] headers = new byte[headerList.size() * 2][];
        int length = 32 + 32 + 8 + 8 + 8 + 4 + key.length + 2;
        for (int i = 0; i < headerList.size(); i++) {
          Header h = headerList.get(i);
          headers[2 * i] = utf8(h.name());
          headers[2 * i + 1] = utf8(h.value());
          length += 8 + headers[2 * i].length + headers[2 * i + 1].length;
        }
        if (length > MAX_ENTRY || headerList.size() > 0xFFFF) {
          throw new IOException("key " + e.keyId() + " has an index entry of " + length + " bytes");
        }
        if (buf.remaining() < 4 + length) {
          flush(ch, buf, crc);
        }
        buf.putInt(length);
        for (int i = 0; i < 4; i++) {
          buf.putLong(e.idLong(i));
        }
        for (int i = 0; i < 4; i++) {
          buf.putLong(e.shaLong(i));
        }
        buf.putLong(e.size()).putLong(e.fetchedAtMillis()).putLong(e.usedAtMillis()).putInt(key.length).put(key)
            .putShort((short) headerList.size());
        for (byte[] s : headers) {
          buf.putInt(s.length).put(s);
        }
      }
      flush(ch, buf, crc);
      buf.putInt((int) crc.getValue());
      buf.flip();
      while (buf.hasRemaining()) {
        ch.write(buf);
      }
      ch.force(true);
    } catch (IOException | RuntimeException e) {
      Files.deleteIfExists(temp);
      throw e;
    }
    DiskStore.moveAtomically(temp, target);
    syncDirectory(target.getParent());
  }

  /**
   * The entries of the snapshot in {@code file}, in the order they were written (eldest first), as
   * the store's index, their headers shared through {@code shared}; a
   * version 1 snapshot's keys as used at {@code nowMillis}.
   *
   * @throws Invalid if the file is not a whole, intact snapshot of this version
   * @throws java.nio.file.NoSuchFileException if there is none
   */
  static KeyIndex read(Path file, SharedHeaders shared, long nowMillis)
      throws IOException, Invalid {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      Reader in = new Reader(ch);
      ByteBuffer head = in.take(16);
      int magic = head.getInt();
      int version = head.getInt();
      long count = head.getLong();
      if (magic != MAGIC) {
        throw new Invalid("not an index snapshot (magic " + Integer.toHexString(magic) + ")");
      }
      if (version != VERSION && version != 1) {
        throw new Invalid("version " + version + ", this node reads version " + VERSION);
      }
      long fileSize = ch.size();
      Entries parsed = new Entries(shared, version == 1 ? nowMillis : null);
      // The count is not checked by the checksum until the end: it must at least fit the file (each
      // entry takes its length and its fixed fields), as the index is sized for it at once.
      if (count < 0 || count > (fileSize - 20) / (4 + parsed.minimumLength()) || count > KeyIndex.MAX_ROWS) {
        throw new Invalid("claims " + count + " entries in " + fileSize + " bytes");
      }
      // Sized for all entries at once (no growing of a million-row index as it fills).
      KeyIndex entries = new KeyIndex((int) count);
      for (long n = 0; n < count; n++) {
        int length = in.take(4).getInt();
        if (length < parsed.minimumLength() || length > MAX_ENTRY) {
          throw new Invalid("entry " + n + " claims " + length + " bytes");
        }
        parsed.next(in.take(length), n, entries);
      }
      int expected = (int) in.crc.getValue(); // of every byte before the checksum
      int stored = in.take(4).getInt();
      if (stored != expected) {
        throw new Invalid("checksum mismatch (stored " + Integer.toHexString(stored) + ", computed "
            + Integer.toHexString(expected) + ")");
      }
      if (!in.atEnd()) {
        throw new Invalid("bytes after the checksum");
      }
      return entries;
    }
  }

  /**
   * Parses entries one after the other. An entry whose headers are byte for byte those of the
   * entry before gets the same list without parsing them again (a store of one kind of artifact
   * has the same few headers throughout).
   */
  private static final class Entries {
    final SharedHeaders shared;
    /** The use time of a version 1 entry, which has none; null for version 2. */
    final Long usedAtOfVersion1;
    byte[] lastHeaderBytes = new byte[0];
    List<Header> lastHeaders;

    Entries(SharedHeaders shared, Long usedAtOfVersion1) {
      this.shared = shared;
      this.usedAtOfVersion1 = usedAtOfVersion1;
    }

    /** No entry is shorter: the fixed fields, an empty key and no headers. */
    int minimumLength() {
      return usedAtOfVersion1 != null ? 82 : 90;
    }

    final long[] id = new long[4];
    final long[] sha = new long[4];

    /** Parses entry {@code n} and adds it to {@code into} as the newest. */
    void next(ByteBuffer b, long n, KeyIndex into) throws Invalid {
      try {
        byte[] arr = b.array();
        for (int i = 0; i < 4; i++) {
          id[i] = b.getLong();
        }
        for (int i = 0; i < 4; i++) {
          sha[i] = b.getLong();
        }
        long size = b.getLong();
        long fetchedAt = b.getLong();
        long usedAt = usedAtOfVersion1 != null ? usedAtOfVersion1 : b.getLong();
        if (size < 0) {
          throw new Invalid("entry " + n + " has size " + size);
        }
        byte[] key = bytes(b);
        int from = b.arrayOffset() + b.position();
        int to = b.arrayOffset() + b.limit();
        List<Header> headers;
        if (lastHeaders != null && Arrays.equals(arr, from, to, lastHeaderBytes, 0, lastHeaderBytes.length)) {
          headers = lastHeaders;
          b.position(b.limit());
        } else {
          int headerCount = Short.toUnsignedInt(b.getShort());
          List<Header> parsed = new ArrayList<>(headerCount);
          for (int i = 0; i < headerCount; i++) {
            parsed.add(new Header(string(b), string(b)));
          }
          if (b.hasRemaining()) {
            throw new Invalid("entry " + n + " has " + b.remaining() + " bytes too many");
          }
          headers = shared.share(parsed);
          lastHeaders = headers;
          lastHeaderBytes = Arrays.copyOfRange(arr, from, to);
        }
        if (!into.addNewest(id, sha, size, fetchedAt, usedAt, key, headers)) {
          throw new Invalid("key " + KeyIndex.hex(id, 0) + " twice");
        }
      } catch (java.nio.BufferUnderflowException | IllegalArgumentException | IndexOutOfBoundsException e) {
        throw new Invalid("entry " + n + " is cut short or malformed: " + e);
      }
    }
  }

  private static String string(ByteBuffer b) {
    int length = b.getInt();
    if (length < 0 || length > b.remaining()) {
      throw new IllegalArgumentException("a string of " + length + " bytes");
    }
    String s = new String(b.array(), b.arrayOffset() + b.position(), length, StandardCharsets.UTF_8);
    b.position(b.position() + length);
    return s;
  }

  private static byte[] bytes(ByteBuffer b) {
    int length = b.getInt();
    if (length < 0 || length > b.remaining()) {
      throw new IllegalArgumentException("a string of " + length + " bytes");
    }
    byte[] out = new byte[length];
    b.get(out);
    return out;
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static void flush(FileChannel ch, ByteBuffer buf, CRC32 crc) throws IOException {
    crc.update(buf.array(), 0, buf.position());
    buf.flip();
    while (buf.hasRemaining()) {
      ch.write(buf);
    }
    buf.clear();
  }

  /** Makes a rename or deletion in {@code dir} durable. */
  static void syncDirectory(Path dir) throws IOException {
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    }
  }

  /** Reads the file in 1 MiB pieces and hands out regions of it, adding each to the checksum. */
  private static final class Reader {
    final FileChannel ch;
    final CRC32 crc = new CRC32();
    final ByteBuffer buf = ByteBuffer.allocate(BUFFER).flip();

    Reader(FileChannel ch) {
      this.ch = ch;
    }

    /** The next {@code n} bytes (n at most the buffer's size), as a buffer of exactly n. */
    ByteBuffer take(int n) throws IOException, Invalid {
      if (buf.remaining() < n) {
        buf.compact();
        while (buf.position() < n) {
          if (ch.read(buf) < 0) {
            throw new Invalid("the file ends early (truncated)");
          }
        }
        buf.flip();
      }
      ByteBuffer region = buf.slice(buf.position(), n);
      crc.update(buf.array(), buf.arrayOffset() + buf.position(), n);
      buf.position(buf.position() + n);
      return region;
    }

    boolean atEnd() throws IOException {
      return !buf.hasRemaining() && ch.read(ByteBuffer.allocate(1)) < 0;
    }
  }
}
