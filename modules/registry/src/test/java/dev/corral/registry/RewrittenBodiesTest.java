package dev.corral.registry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class RewrittenBodiesTest {
  final AtomicInteger runs = new AtomicInteger();

  BodyRewrite prefixing(String base) {
    return stored -> {
      runs.incrementAndGet();
      return ByteString.fromString(base, StandardCharsets.UTF_8).concat(stored);
    };
  }

  static ByteString bytes(String s) {
    return ByteString.fromString(s, StandardCharsets.UTF_8);
  }

  @Test
  void aBodyIsRewrittenOncePerInputs() {
    RewrittenBodies memo = new RewrittenBodies(1024 * 1024);
    BodyRewrite a = memo.memoized("http://127.0.0.1:1", prefixing("http://127.0.0.1:1 "));
    BodyRewrite b = memo.memoized("http://127.0.0.1:2", prefixing("http://127.0.0.1:2 "));
    assertEquals("http://127.0.0.1:1 doc", a.rewrite(bytes("doc")).utf8String());
    assertEquals("http://127.0.0.1:1 doc", memo.memoized("http://127.0.0.1:1", prefixing("http://127.0.0.1:1 ")).rewrite(bytes("doc")).utf8String());
    assertEquals(1, runs.get());
    assertEquals("http://127.0.0.1:2 doc", b.rewrite(bytes("doc")).utf8String(), "other inputs, other output");
    assertEquals("http://127.0.0.1:1 doc2", a.rewrite(bytes("doc2")).utf8String(), "other body, rewritten afresh");
    assertEquals(3, runs.get());
  }

  @Test
  void boundedByBytes() {
    RewrittenBodies memo = new RewrittenBodies(10_000);
    BodyRewrite r = memo.memoized("x", prefixing(""));
    for (int i = 0; i < 100; i++) {
      r.rewrite(bytes(i + "-".repeat(1000)));
    }
    assertTrue(memo.size() <= 10, "held: " + memo.size());
  }
}
