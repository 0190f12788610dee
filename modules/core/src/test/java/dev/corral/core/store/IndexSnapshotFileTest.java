package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.Sha256;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The index snapshot's file on its own: larger than the reader's buffer, odd entries, limits. */
class IndexSnapshotFileTest {
  @TempDir Path dir;

  @Test
  void aSnapshotSeveralBuffersLongReadsBackEveryEntryInOrder() throws Exception {
    List<StoredArtifact> written = new ArrayList<>();
    for (int i = 0; i < 20_000; i++) { // about 3.5 MiB: the reader refills its 1 MiB buffer
      List<Header> headers = switch (i % 3) {
        case 0 -> List.of(new Header("Content-Type", "application/octet-stream"));
        case 1 -> List.of(new Header("Content-Type", "text/plain; charset=utf-8"), new Header("ETag", "\"" + i + "\""));
        default -> List.of();
      };
      written.add(artifact(i, "k" + i, headers));
    }
    // One entry of almost the largest size, and keys and values that are not ASCII.
    written.add(7_000, artifact(-1, "big", List.of(new Header("X-Big", "v".repeat(IndexSnapshot.MAX_ENTRY - 400)))));
    written.add(artifact(-2, "ключ/ü", List.of(new Header("Content-Disposition", "attachment; filename=\"ñ.txt\""))));

    IndexSnapshot.write(dir.resolve("new.snapshot"), dir.resolve("index.snapshot"), entries(written));
    assertFalse(Files.exists(dir.resolve("new.snapshot")), "renamed into place");
    KeyIndex read = IndexSnapshot.read(dir.resolve("index.snapshot"), new SharedHeaders(), 1);

    List<StoredArtifact> readBack = new ArrayList<>();
    List<Long> usedAt = new ArrayList<>();
    KeyIndex.Cursor e = read.eldestFirst();
    while (e.next()) {
      readBack.add(e.artifact());
      usedAt.add(e.usedAtMillis());
    }
    assertEquals(written, readBack, "every entry, in the order written");
    // Each key's last use comes back with it.
    assertEquals(written.stream().map(a -> a.fetchedAtMillis() + 7).toList(), usedAt);
  }

  /** An index of {@code artifacts} in their order, each last used 7 ms after it was fetched. */
  private static KeyIndex entries(List<StoredArtifact> artifacts) {
    KeyIndex index = new KeyIndex(artifacts.size());
    for (StoredArtifact a : artifacts) {
      index.put(a, a.fetchedAtMillis() + 7);
    }
    return index;
  }

  @Test
  void anEntryTooLargeForTheFormatLeavesNoSnapshotAndNoTemporaryFile() {
    List<StoredArtifact> entries = List.of(
        artifact(1, "small", List.of()),
        artifact(2, "huge", List.of(new Header("X-Huge", "v".repeat(IndexSnapshot.MAX_ENTRY)))));
    assertThrows(IOException.class,
        () -> IndexSnapshot.write(dir.resolve("new.snapshot"), dir.resolve("index.snapshot"), entries(entries)));
    assertFalse(Files.exists(dir.resolve("new.snapshot")));
    assertFalse(Files.exists(dir.resolve("index.snapshot")));
  }

  @Test
  void aCountTheFileCannotHoldIsInvalidBeforeAnythingIsSizedForIt() throws IOException {
    IndexSnapshot.write(dir.resolve("new.snapshot"), dir.resolve("index.snapshot"),
        entries(List.of(artifact(1, "a", List.of()), artifact(2, "b", List.of()))));
    byte[] bytes = Files.readAllBytes(dir.resolve("index.snapshot"));
    java.nio.ByteBuffer.wrap(bytes).putLong(8, 3); // three entries claimed in the room of two
    Files.write(dir.resolve("index.snapshot"), bytes);
    IndexSnapshot.Invalid e = assertThrows(IndexSnapshot.Invalid.class,
        () -> IndexSnapshot.read(dir.resolve("index.snapshot"), new SharedHeaders(), 1));
    assertTrue(e.getMessage().contains("claims 3 entries"), e.getMessage());
  }

  @Test
  void anEmptyFileIsInvalidNotAnError() throws IOException {
    Files.write(dir.resolve("index.snapshot"), new byte[0]);
    IndexSnapshot.Invalid e = assertThrows(IndexSnapshot.Invalid.class,
        () -> IndexSnapshot.read(dir.resolve("index.snapshot"), new SharedHeaders(), 1));
    assertTrue(e.getMessage().contains("truncated"), e.getMessage());
  }

  @Test
  void headersManyKeysHaveAlikeAreOneCopyAndUniqueOnesAreKeptAsTheyCome() {
    SharedHeaders shared = new SharedHeaders();
    List<Header> a = shared.share(List.of(new Header("Content-Type", new String("application/json"))));
    List<Header> b = shared.share(List.of(new Header("Content-Type", new String("application/json"))));
    assertSame(a, b, "one list for every key with the same Content-Type only");

    List<Header> withEtag1 = shared.share(List.of(new Header("Content-Type", "application/json"), new Header("ETag", "\"1\"")));
    List<Header> withEtag2 = shared.share(List.of(new Header("Content-Type", "application/json"), new Header("ETag", "\"2\"")));
    assertNotSame(withEtag1, withEtag2);
    assertSame(a.get(0), withEtag1.get(0), "the Content-Type header itself is shared");
    assertSame(withEtag1.get(1).name(), withEtag2.get(1).name(), "and every header's name");
    assertEquals(List.of(new Header("Content-Type", "application/json"), new Header("ETag", "\"2\"")), withEtag2);
  }

  @Test
  void theSharedTablesStopGrowingAtTheirBound() {
    SharedHeaders shared = new SharedHeaders();
    for (int i = 0; i < SharedHeaders.MAX + 100; i++) {
      shared.share(List.of(new Header("Content-Type", "type/" + i)));
    }
    List<Header> first = shared.share(List.of(new Header("Content-Type", "type/1")));
    assertSame(first, shared.share(List.of(new Header("Content-Type", "type/1"))), "those kept before the bound stay shared");
    List<Header> past = shared.share(List.of(new Header("Content-Type", "type/" + (SharedHeaders.MAX + 50))));
    assertNotSame(past, shared.share(List.of(new Header("Content-Type", "type/" + (SharedHeaders.MAX + 50)))),
        "past the bound a list is not kept");
    assertEquals(List.of(new Header("Content-Type", "type/" + (SharedHeaders.MAX + 50))), past);
  }

  private static StoredArtifact artifact(int n, String key, List<Header> headers) {
    String id = Sha256.hex(key.getBytes(StandardCharsets.UTF_8));
    return new StoredArtifact(id, "repo\nhttp://upstream.example/" + key + "\n", Sha256.hex(("bytes " + n).getBytes(StandardCharsets.UTF_8)),
        Math.abs(n) * 10L, headers, 1_000_000L + n);
  }
}
