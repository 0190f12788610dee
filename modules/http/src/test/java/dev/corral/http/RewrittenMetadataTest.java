package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.github.benmanes.caffeine.cache.Scheduler;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.wait.ByteBudget;
import dev.corral.registry.BodyRewrite;
import java.io.ByteArrayInputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.zip.GZIPInputStream;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Rewritten metadata is remembered by the stored body's digest and the rewrite's inputs: many
 * requests at once share one rewrite, and a rewrite that finds no room in the byte budget fails
 * (a 503 for the client) without being remembered.
 */
class RewrittenMetadataTest {
  private final ExecutorService io = Executors.newFixedThreadPool(4);
  private final HotBlobs hot = new HotBlobs(8L * 1024 * 1024);
  private final AtomicInteger rewrites = new AtomicInteger();

  @AfterEach
  void stop() {
    io.shutdownNow();
  }

  private StoredArtifact stored(String text) {
    ByteString body = ByteString.fromString(text);
    String sha = Sha256.hex(body);
    hot.put(sha, body); // the store itself is never read: the hot copy is
    return new StoredArtifact("npm|k", "k", sha, body.length(), List.of(), 0);
  }

  private BodyRewrite upper(String inputs) {
    return BodyRewrite.keyed(inputs, b -> {
      rewrites.incrementAndGet();
      return ByteString.fromString(b.utf8String().toUpperCase() + " " + inputs);
    });
  }

  private RewrittenMetadata metadata(ByteBudget budget) {
    return new RewrittenMetadata(budget, null, hot, io);
  }

  @Test
  void requestsAtOnceForOneStoredVersionShareOneRewrite() throws Exception {
    RewrittenMetadata metadata = metadata(new ByteBudget(1 << 20, Duration.ofSeconds(5), Scheduler.systemScheduler(), io));
    StoredArtifact v1 = stored("doc one");
    List<CompletableFuture<RewrittenMetadata.Rewritten>> all = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      all.add(metadata.rewritten(v1, upper("base").inputs(), upper("base")).toCompletableFuture());
    }
    RewrittenMetadata.Rewritten first = all.get(0).get(10, TimeUnit.SECONDS);
    for (CompletableFuture<RewrittenMetadata.Rewritten> f : all) {
      assertSame(first.body(), f.get(10, TimeUnit.SECONDS).body(), "one shared result");
    }
    assertEquals("DOC ONE base", first.body().utf8String());
    assertEquals("\"" + Sha256.hex(first.body()).substring(0, 32) + "\"", first.etag());
    assertEquals(1, rewrites.get(), "one rewrite for 50 requests");

    metadata.rewritten(v1, Optional.of("other"), upper("other")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    metadata.rewritten(stored("doc two"), Optional.of("base"), upper("base")).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals(3, rewrites.get(), "other inputs and another stored version are rewritten on their own");
  }

  @Test
  void noRoomInTheBudgetFailsAndIsNotRemembered() throws Exception {
    ByteBudget budget = new ByteBudget(100, Duration.ZERO, Scheduler.disabledScheduler(), io);
    RewrittenMetadata metadata = metadata(budget);
    StoredArtifact v1 = stored("a small document");
    ByteBudget.Permit full = budget.acquire(100).toCompletableFuture().get();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> metadata.rewritten(v1, Optional.of("b"), upper("b")).toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertInstanceOf(ByteBudget.Exhausted.class, e.getCause());
    assertEquals(0, rewrites.get());
    full.close();
    assertEquals("A SMALL DOCUMENT b",
        metadata.rewritten(v1, Optional.of("b"), upper("b")).toCompletableFuture().get(10, TimeUnit.SECONDS).body().utf8String());
    assertEquals(0, budget.held(), "the rewrite's bytes are given back");
  }

  @Test
  void aGzipFormIsMadeOnceAndSharedAndDecodesToTheBody() throws Exception {
    ByteBudget budget = new ByteBudget(1 << 20, Duration.ofSeconds(5), Scheduler.systemScheduler(), io);
    RewrittenMetadata metadata = metadata(budget);
    ByteString body = ByteString.fromString("{\"name\":\"x\"}".repeat(200));
    String sha = Sha256.hex(body);
    List<CompletableFuture<RewrittenMetadata.Rewritten>> all = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      all.add(metadata.gzipped(sha, "W/\"up\"", body).toCompletableFuture());
    }
    RewrittenMetadata.Rewritten first = all.get(0).get(10, TimeUnit.SECONDS);
    for (CompletableFuture<RewrittenMetadata.Rewritten> f : all) {
      assertSame(first.body(), f.get(10, TimeUnit.SECONDS).body(), "one shared gzip form");
    }
    assertEquals(1, metadata.gzipsMade(), "made once for 20 requests");
    assertEquals("W/\"up-gzip\"", first.etag());
    assertTrue(first.body().length() < body.length() / 10, "compressed: " + first.body().length());
    try (var in = new GZIPInputStream(new ByteArrayInputStream(first.body().toArray()))) {
      assertArrayEquals(body.toArray(), in.readAllBytes());
    }
    assertEquals(0, budget.held(), "the gzip form's bytes are given back");

    RewrittenMetadata.Rewritten untagged = metadata.gzipped(sha, null, body).toCompletableFuture().get(10, TimeUnit.SECONDS);
    assertEquals("\"" + sha.substring(0, 32) + "-gzip\"", untagged.etag(), "no identity ETag: one from the digest");
    assertEquals(2, metadata.gzipsMade());
  }

  @Test
  void noRoomToMakeAGzipFormFailsAndIsNotRemembered() throws Exception {
    ByteBudget budget = new ByteBudget(100, Duration.ZERO, Scheduler.disabledScheduler(), io);
    RewrittenMetadata metadata = metadata(budget);
    ByteString body = ByteString.fromString("metadata");
    ByteBudget.Permit full = budget.acquire(100).toCompletableFuture().get();
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> metadata.gzipped("ab", "\"e\"", body).toCompletableFuture().get(10, TimeUnit.SECONDS));
    assertInstanceOf(ByteBudget.Exhausted.class, e.getCause());
    full.close();
    assertEquals("\"e-gzip\"", metadata.gzipped("ab", "\"e\"", body).toCompletableFuture().get(10, TimeUnit.SECONDS).etag());
    assertEquals(1, metadata.gzipsMade());
  }
}
