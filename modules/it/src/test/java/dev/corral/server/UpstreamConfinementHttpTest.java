package dev.corral.server;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.testkit.TestNode;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.persistence.typed.PersistenceId;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 12, item 2, in one in-process node: after a refused redirect the key has neither a stored
 * copy nor a key record, the refusal is counted, and the client's 502 names neither the target
 * nor the query. {@code UpstreamConfinementIT} covers the findings with a real process.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UpstreamConfinementHttpTest {
  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed().withUpstream("other").config(n -> """
      corral.repos {
        gen { type = generic, url = "%s", retries = 0 }
      }
      """.formatted(n.url("/gen/")));

  @Test
  void aRefusedRedirectLeavesNoStoredCopyAndNoKeyRecord() throws Exception {
    FakeUpstream other = node.upstream("other");
    String target = other.url("/gen/elsewhere");
    // Both fakes answer from the same paths; only the other one is ever redirected to.
    node.paths.put("/gen/elsewhere", (exchange, n) -> TestNode.ok(exchange, "from a host nobody configured".getBytes(UTF_8)));
    node.paths.put("/gen/moved", (exchange, n) -> {
      exchange.getResponseHeaders().add("Location", target);
      FakeUpstream.send(exchange, 302, new byte[0]);
    });

    for (int i = 0; i < 2; i++) {
      HttpResponse<byte[]> r = node.get("/gen/moved?X-Amz-Signature=s3cr3t");
      String body = new String(r.body(), UTF_8);
      assertEquals(502, r.statusCode(), body);
      assertTrue(body.contains("refused by policy"), body);
      assertFalse(body.contains(Integer.toString(URI.create(target).getPort())) || body.contains("s3cr3t"), body);
      assertFalse("HIT".equals(TestNode.xCache(r)));
    }
    assertEquals(0, other.requests("/gen/elsewhere"), "the other host was never asked");
    assertEquals(2, node.upstream().requests("/gen/moved"), "each request asked again");
    assertEquals(2.0, node.server().metrics().upstreamRequests.labelValues("gen", "refused").get());

    ArtifactKey key = ArtifactKey.of("gen", node.url("/gen/moved?X-Amz-Signature=s3cr3t"));
    assertEquals(Optional.empty(), node.server().node().store().lookup(key));
    String persistenceId = PersistenceId.of("Fetch", key.id()).id();
    assertEquals(Optional.empty(), node.server().node().records().read(persistenceId).toCompletableFuture()
        .get(10, TimeUnit.SECONDS).value(), "no key record");
  }
}
