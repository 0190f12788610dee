package dev.corral.core.fetch;

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
    FetchEntity.Record r = FetchEntity.Record.EMPTY.committed(bytes("a"), "http://n1");
    r = r.holding("http://n2", "a".repeat(64));
    assertEquals(List.of("http://n1", "http://n2"), r.holders());
    assertEquals(List.of("http://n1", "http://n2", "http://n3"), r.committed(bytes("a"), "http://n3").holders());
    // New bytes (a refetch that changed): the old holders hold something else.
    assertEquals(List.of("http://n3"), r.committed(bytes("b"), "http://n3").holders());
  }

  @Test
  void aHolderOfOtherBytesIsNotListedAndAnEvictionDropsTheNode() {
    FetchEntity.Record r = FetchEntity.Record.EMPTY.committed(bytes("a"), "http://n1");
    assertSame(r, r.holding("http://n2", "b".repeat(64)));
    assertSame(r, r.holding("http://n1", "a".repeat(64)));
    assertEquals(List.of(), r.dropped("http://n1").holders());
    assertSame(r, r.dropped("http://n9"));
    assertEquals(List.of(), FetchEntity.Record.EMPTY.holding("http://n1", "a".repeat(64)).holders());
  }
}
