package dev.corral.core.wait;

import dev.corral.core.download.Failure;
import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Reply;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.store.StoredArtifact;
import java.io.IOException;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;

/**
 * A key's whole body read through the cache, as a client's request for it would be: a fresh
 * stored copy at once, otherwise the key's entity and this node's {@link Waiters} (coalesced
 * cluster-wide, stored, within the waiter's budget). For a repository that must know one document
 * to resolve a request (the packument naming a tarball's integrity, an index page naming a file),
 * without an HTTP request made up for it.
 */
public final class WholeBodies {

  /** How a read ended. */
  public sealed interface Read {
    /** The verified bytes. */
    record Bytes(ByteString bytes) implements Read {}

    /** The upstream says the key does not exist (404 or 410). */
    record Missing() implements Read {}

    /** No bytes: the fetch failed, the client went away, or the body is over the limit. */
    record Failed(Failure cause, String reason) implements Read {}

    /** The waiter's budget ran out (the caller may bypass the cache, as the repository says). */
    record TimedOut() implements Read {}

    /** The node's {@link ByteBudget} had no room for the body within its wait (answer 503). */
    record Shed(String reason) implements Read {}
  }

  private final Node node;
  private final Waiters waiters;
  private final ActorSystem<?> system;
  private final long limit;
  private final ByteBudget budget;

  /**
   * @param limit the largest body read whole; a larger one is {@link Read.Failed}
   * @param budget the node's bytes for bodies held whole: a read from disk or from a download
   *     holds its size while it runs ({@link Read.Shed} when there is no room)
   */
  public WholeBodies(Node node, Waiters waiters, ActorSystem<?> system, long limit, ByteBudget budget) {
    this.node = node;
    this.waiters = waiters;
    this.system = system;
    this.limit = limit;
    this.budget = budget;
  }

  /**
   * Reads the key's body.
   *
   * @param mutable the key is metadata, fresh only within the repository's metadata TTL
   * @param token the waiter's cancel token, reserved from the waiters' {@link CancelRegistry}
   */
  public CompletionStage<Read> read(ArtifactKey key, boolean mutable, long token) {
    Optional<StoredArtifact> hit = node.store().lookup(key)
        .filter(a -> !mutable || node.policy(key.repo()).isFresh(a, node.clock().millis()));
    if (hit.isPresent()) {
      return stored(hit.get()).thenCompose(r -> r instanceof Read.Bytes ? done(r) : asked(key, mutable, token));
    }
    return asked(key, mutable, token);
  }

  private CompletionStage<Read> asked(ArtifactKey key, boolean mutable, long token) {
    return waiters.await(key, token, mutable).thenCompose(answer -> {
      if (answer instanceof Waiters.TimedOut) {
        return done(new Read.TimedOut());
      }
      if (answer instanceof Waiters.Cancelled) {
        return done(new Read.Failed(Failure.INTERNAL, "the client closed the connection"));
      }
      Reply reply = ((Waiters.Answered) answer).reply();
      if (reply instanceof Reply.Body b) {
        return done(b.bytes().size() <= limit ? new Read.Bytes(b.bytes()) : tooLarge(b.bytes().size()));
      }
      if (reply instanceof Reply.Stored s) {
        return stored(s.artifact());
      }
      if (reply instanceof Reply.Stale s) {
        // The revalidation may have replaced the stale bytes meanwhile: then the store holds the fresh copy.
        return stored(s.artifact()).thenCompose(r -> r instanceof Read.Bytes ? done(r)
            : node.store().lookup(key).map(this::stored).orElse(done(r)));
      }
      if (reply instanceof Reply.Streaming s) {
        if (s.length() > limit) {
          return done(tooLarge(s.length()));
        }
        var growing = node.downloads().find(s.downloadId());
        if (growing.isPresent()) {
          var reader = growing.get().reader();
          return held(s.length(), () -> reader
              .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), system)
              .<Read>thenApply(Read.Bytes::new)
              .exceptionally(e -> new Read.Failed(Failure.UPSTREAM_ERROR, "upstream transfer failed")));
        }
        // The download ended between the reply and now: read what it committed, if anything.
        return node.store().lookup(key).map(this::stored)
            .orElse(done(new Read.Failed(Failure.UPSTREAM_ERROR, "upstream transfer failed")));
      }
      if (reply instanceof Reply.NotFound) {
        return done(new Read.Missing());
      }
      if (reply instanceof Reply.Failed f) {
        return done(new Read.Failed(f.cause(), f.reason()));
      }
      return done(new Read.Failed(Failure.INTERNAL, "unexpected answer: " + reply.getClass().getSimpleName()));
    });
  }

  /** A stored copy read whole and verified (the hot copy when there is one), on the I/O pool. */
  private CompletionStage<Read> stored(StoredArtifact artifact) {
    if (artifact.size() > limit) {
      return done(tooLarge(artifact.size()));
    }
    Optional<ByteString> hot = node.hot().get(artifact.sha256());
    if (hot.isPresent()) {
      return done(new Read.Bytes(hot.get()));
    }
    return held(artifact.size(), () -> CompletableFuture.supplyAsync(() -> {
      try {
        return new Read.Bytes(node.store().readAll(artifact));
      } catch (IOException e) {
        return new Read.Failed(Failure.INTERNAL, "stored bytes of this artifact are missing or corrupt");
      }
    }, node.io()));
  }

  /** A read that holds {@code size} bytes of the budget while it runs. */
  private CompletionStage<Read> held(long size, java.util.function.Supplier<CompletionStage<Read>> read) {
    return budget.acquire(size).handle((permit, e) -> {
      if (e != null) {
        Throwable t = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
        return done(new Read.Shed(t.getMessage()));
      }
      return read.get().whenComplete((r, x) -> permit.close());
    }).thenCompose(r -> r);
  }

  private Read tooLarge(long size) {
    return new Read.Failed(Failure.INTERNAL, "a body of " + size + " bytes is over the " + limit + " read whole");
  }

  private static CompletionStage<Read> done(Read read) {
    return CompletableFuture.completedFuture(read);
  }
}
