package dev.corral.core.fetch;

import dev.corral.core.record.Record;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.corral.core.store.StoredArtifact;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the key's record keeps its list of holders (issue 3 item 5). */
class ReplicaDirectoryTest {
  private static StoredArtifact bytes(String sha) {
    return new StoredArtifact("k", "r|u", sha.repeat(64), 1, List.of(), 0);
  }

  @Test
  void aCommitKeepsTheHoldersOfTheSameBytesAndForgetsThoseOfOtherBytes() {
    Record r = Record.EMPTY.committed(bytes("a"), "http://127.0.0.1:20001");
    r = r.holding("http://127.0.0.1:20002", "a".repeat(64));
    assertEquals(List.of("http://127.0.0.1:20001", "http://127.0.0.1:20002"), r.holders());
    assertEquals(List.of("http://127.0.0.1:20001", "http://127.0.0.1:20002", "http://127.0.0.1:20003"), r.committed(bytes("a"), "http://127.0.0.1:20003").holders());
    // New bytes (a refetch that changed): the old holders hold something else.
    assertEquals(List.of("http://127.0.0.1:20003"), r.committed(bytes("b"), "http://127.0.0.1:20003").holders());
  }

  @Test
  void aHolderOfOtherBytesIsNotListedAndAnEvictionDropsTheNode() {
    Record r = Record.EMPTY.committed(bytes("a"), "http://127.0.0.1:20001");
    assertSame(r, r.holding("http://127.0.0.1:20002", "b".repeat(64)));
    assertSame(r, r.holding("http://127.0.0.1:20001", "a".repeat(64)));
    assertEquals(List.of(), r.dropped("http://127.0.0.1:20001").holders());
    assertSame(r, r.dropped("http://127.0.0.1:20009"));
    assertEquals(List.of(), Record.EMPTY.holding("http://127.0.0.1:20001", "a".repeat(64)).holders());
  }
}
