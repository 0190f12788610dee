package dev.corral.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.core.key.ArtifactKey;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class ParsedBodiesTest {
  final ArtifactKey a = ArtifactKey.of("r", "http://127.0.0.1:9/a");
  final ArtifactKey b = ArtifactKey.of("r", "http://127.0.0.1:9/b");
  final AtomicInteger parses = new AtomicInteger();

  Map<String, String> parse(ByteString body) {
    parses.incrementAndGet();
    return Map.of("body", body.utf8String());
  }

  static ByteString bytes(String s) {
    return ByteString.fromString(s, StandardCharsets.UTF_8);
  }

  @Test
  void sameKeyAndContentIsParsedOnceEvenFromAnotherCopy() {
    ParsedBodies<String> memo = new ParsedBodies<>(100);
    assertEquals("v1", memo.get(a, bytes("v1"), this::parse).get("body"));
    // another ByteString instance with the same bytes, in two chunks
    assertEquals("v1", memo.get(a, bytes("v").concat(bytes("1")), this::parse).get("body"));
    assertEquals(1, parses.get());
  }

  @Test
  void changedContentOrAnotherKeyIsParsedAgain() {
    ParsedBodies<String> memo = new ParsedBodies<>(100);
    memo.get(a, bytes("v1"), this::parse);
    assertEquals("v2", memo.get(a, bytes("v2"), this::parse).get("body"));
    assertEquals("v1", memo.get(b, bytes("v1"), this::parse).get("body"));
    assertEquals(3, parses.get());
  }

  @Test
  void boundedByEntries() {
    ParsedBodies<String> memo = new ParsedBodies<>(10);
    for (int i = 0; i < 100; i++) {
      memo.get(a, bytes("v" + i), this::parse);
    }
    assertEquals(true, memo.size() <= 10, "held: " + memo.size());
  }
}
