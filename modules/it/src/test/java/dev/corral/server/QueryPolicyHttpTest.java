package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.http.HttpResponse;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, cache busting: a generic repository's {@code query} policy decides what of a query
 * goes upstream and into the key (SEMANTICS K1). With {@code drop}, 2,000 query variants of one
 * path are one upstream GET and one key; with a list, only the named parameters count, in any
 * order; {@code keep} (the default) keeps today's behaviour, one key per query.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueryPolicyHttpTest {
  private static final int VARIANTS = 2_000;

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .otherwise((exchange, n) -> FakeUpstream.send(exchange, 200,
          TestNode.bytes(2048, exchange.getRequestURI().getPath().hashCode())))
      .config(n -> """
          corral.repos {
            dropped { type = generic, url = "%s", query = drop }
            listed { type = generic, url = "%s", query = [v, arch] }
          }
          """.formatted(n.url("/"), n.url("/")));

  @Test
  void withDropTwoThousandQueryVariantsAreOneUpstreamGetAndOneKey() {
    int keysBefore = node.server().node().store().keyCount();
    byte[] expected = TestNode.bytes(2048, "/busted/file.bin".hashCode());
    for (int i = 0; i < VARIANTS; i++) {
      HttpResponse<byte[]> r = node.get("/dropped/busted/file.bin?cb=" + i + "&t=" + (i * 7));
      assertEquals(200, r.statusCode(), "variant " + i);
      assertArrayEquals(expected, r.body(), "variant " + i);
    }
    assertEquals(1, node.upstream().requests("/busted/file.bin"), "one upstream GET for every variant");
    assertEquals(List.of("/busted/file.bin"), node.upstream().targets.stream()
        .filter(t -> t.startsWith("/busted/")).toList(), "sent upstream without the query");
    assertEquals(keysBefore + 1, node.server().node().store().keyCount(), "one key");
  }

  @Test
  void withAListOnlyTheNamedParametersCountInAnyOrder() {
    int keysBefore = node.server().node().store().keyCount();
    assertEquals(200, node.get("/listed/pkg/index?v=1&cb=1&arch=x86").statusCode());
    assertEquals(200, node.get("/listed/pkg/index?arch=x86&cb=2&v=1").statusCode());
    assertEquals(200, node.get("/listed/pkg/index?cb=3&v=1&arch=x86&utm=z").statusCode());
    assertEquals(List.of("/pkg/index?arch=x86&v=1"), node.upstream().targets.stream()
        .filter(t -> t.startsWith("/pkg/")).toList(), "one GET, with the named parameters only, by name");
    assertEquals(200, node.get("/listed/pkg/index?v=2&arch=x86").statusCode());
    assertEquals(2, node.upstream().requests("/pkg/index"), "another kept value is another key");
    assertEquals(keysBefore + 2, node.server().node().store().keyCount());
  }

  @Test
  void keepIsTheDefaultAndEveryQueryIsItsOwnKey() {
    for (int i = 0; i < 3; i++) {
      assertEquals(200, node.get("/up/kept/file.bin?cb=" + i).statusCode());
    }
    assertEquals(List.of("/kept/file.bin?cb=0", "/kept/file.bin?cb=1", "/kept/file.bin?cb=2"),
        node.upstream().targets.stream().filter(t -> t.startsWith("/kept/")).toList());
  }
}
