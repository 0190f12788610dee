package dev.corral.http;

import static dev.corral.http.Answers.done;
import static dev.corral.http.Answers.text;

import dev.corral.core.download.Failure;
import dev.corral.core.fetch.FetchPolicy;
import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Lifetime;
import dev.corral.core.wait.Waiters;
import dev.corral.registry.Target;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.util.ByteString;

/**
 * Serves one key: a stored copy from this node's store at once when the key is immutable, or when
 * it is still fresh (within its {@link Lifetime}: the repository's metadata TTL for metadata);
 * otherwise the key's entity
 * decides (fetch, coalesce, or serve stale and revalidate) and this node's {@link Waiters} wait
 * for it within the budget. Each answer is counted once, here.
 *
 * <p>A key served as compressible metadata is answered gzip-encoded to a client that takes it
 * when its whole body is in memory or read whole (see {@link ArtifactResponses}); a body still
 * downloading, or too large to read whole, is sent identity. Artifacts are sent as they are.
 */
final class KeyServe {
  /** On a stale copy served because its revalidation failed upstream (stale-if-error). */
  static final RawHeader REVALIDATION_FAILED = RawHeader.create("Warning", "111 - \"Revalidation Failed\"");

  /**
   * A key's answer and how it was served ({@code via} is null for an answer without the key's
   * bytes: an error, a bypass).
   */
  record Served(Via via, HttpResponse response) {}

  private final Node node;
  private final Waiters waiters;
  private final ArtifactResponses responses;
  private final RequestCounts counts;
  private final Bypass bypass;
  /** The per-client miss rate limit; null when off. */
  private final MissRates missRates;
  private final ClientOf clientOf;
  /** Where the gzip forms of metadata are made once and remembered. */
  private final RewrittenMetadata forms;

  /** The client address of a request, for the miss rate limit. */
  interface ClientOf {
    java.util.Optional<String> of(HttpRequest request);
  }

  KeyServe(Node node, Waiters waiters, RequestCounts counts, Bypass bypass, MissRates missRates, ClientOf clientOf,
      RewrittenMetadata forms) {
    this.forms = forms;
    this.missRates = missRates;
    this.clientOf = clientOf;
    this.node = node;
    this.waiters = waiters;
    this.counts = counts;
    this.bypass = bypass;
    this.responses = new ArtifactResponses(node.store(), node.hot(), node.io());
  }

  /**
   * Answers a GET or HEAD for a key, sent as it is.
   *
   * @param mutable the key is metadata that changes upstream (the repository adapter says so; see
   *     {@link Target.Artifact})
   */
  CompletionStage<Served> serve(HttpRequest request, ArtifactKey key, boolean mutable) {
    return serve(request, key, Lifetime.of(mutable), false);
  }

  /**
   * The same, for a key whose stored copy is fresh for {@code lifetime} (see
   * {@link Target.Artifact#lifetime()}); {@code compressible}: the key is metadata that may be sent
   * gzip-encoded (never an artifact: see {@link ArtifactRoute}).
   */
  CompletionStage<Served> serve(HttpRequest request, ArtifactKey key, Lifetime lifetime, boolean compressible) {
    RewrittenMetadata gzip = compressible ? forms : null;
    // A hit whose verified bytes are in memory is answered from them: no file system call.
    Optional<StoredArtifact> indexed = node.store().indexed(key)
        .filter(a -> fresh(key, a, lifetime));
    if (indexed.isPresent()) {
      Optional<ByteString> hot = node.hot().get(indexed.get().sha256());
      if (hot.isPresent()) {
        if (gzip != null) {
          return responses.metadata(request, Via.HIT, indexed.get().headers(), hot.get(), indexed.get().sha256(), gzip)
              .thenApply(r -> served(key.repo(), Via.HIT, r));
        }
        return done(served(key.repo(), Via.HIT, responses.bytes(request, Via.HIT, 200, indexed.get().headers(), hot.get())));
      }
    }
    Optional<StoredArtifact> hit = node.store().lookup(key)
        .filter(a -> fresh(key, a, lifetime));
    if (hit.isPresent()) {
      return responses.stored(request, Via.HIT, hit.get(), gzip)
          .thenCompose(r -> r.isPresent() ? done(served(key.repo(), Via.HIT, r.get())) : miss(request, key, lifetime, gzip));
    }
    return miss(request, key, lifetime, gzip);
  }

  private boolean fresh(ArtifactKey key, StoredArtifact stored, Lifetime lifetime) {
    return lifetime.kind() == Lifetime.Kind.IMMUTABLE || node.policy(key.repo()).isFresh(stored, node.clock().millis(), lifetime);
  }

  /** @param gzip the gzip forms when the key is compressible metadata, else null */
  private CompletionStage<Served> miss(HttpRequest request, ArtifactKey key, Lifetime lifetime, RewrittenMetadata gzip) {
    if (missRates != null) {
      Optional<String> client = clientOf.of(request);
      java.util.OptionalLong wait = client.isPresent() ? missRates.take(client.get()) : java.util.OptionalLong.empty();
      if (wait.isPresent()) {
        counts.limited(key.repo());
        return done(new Served(null, counts.count(key.repo(), "limited",
            text(429, "too many requests for artifacts not in the cache from this address")
                .addHeader(RawHeader.create("Retry-After", String.valueOf(wait.getAsLong()))))));
      }
    }
    ConnectionScope scope = request.getAttribute(ConnectionScope.KEY).orElse(null);
    long token = scope != null ? scope.reserve() : waiters.cancels().reserve();
    return waiters.await(key, token, lifetime)
        .thenCompose(answer -> answer(request, key, answer, gzip))
        .whenComplete((r, e) -> {
          if (scope != null) {
            scope.done(token);
          }
        });
  }

  private CompletionStage<Served> answer(HttpRequest request, ArtifactKey key, Waiters.Answer answer,
      RewrittenMetadata gzip) {
    String repo = key.repo();
    FetchPolicy policy = node.policy(repo);
    if (answer instanceof Waiters.Cancelled) {
      return done(failed(repo, text(503, "client closed the connection")));
    }
    if (answer instanceof Waiters.TimedOut) {
      if (policy.bypassOnBudget()) {
        return bypass.fetch(key).thenApply(r -> new Served(null, r));
      }
      return done(failed(repo, text(504, "timed out waiting for the upstream")));
    }
    Reply reply = ((Waiters.Answered) answer).reply();
    if (reply instanceof Reply.Body b) {
      if (gzip != null) {
        // The digest names the bytes as the store does, so a later hit finds the same gzip form.
        return responses.metadata(request, b.via(), b.headers(), b.bytes(), Sha256.hex(b.bytes()), gzip)
            .thenApply(r -> served(repo, b.via(), warned(b.headers(), r)));
      }
      return done(served(repo, b.via(), warned(b.headers(),
          responses.bytes(request, b.via(), 200, b.headers(), b.bytes()))));
    }
    if (reply instanceof Reply.Stored s) {
      return responses.stored(request, s.via(), s.artifact(), gzip)
          .thenApply(r -> r.isPresent() ? served(repo, s.via(), r.get())
              : failed(repo, text(502, "stored bytes of this artifact are missing or corrupt")));
    }
    if (reply instanceof Reply.Stale s) {
      return responses.stored(request, Via.STALE, s.artifact(), gzip).thenCompose(r -> {
        if (r.isPresent()) {
          return done(served(repo, Via.STALE, s.revalidationFailed() ? r.get().addHeader(REVALIDATION_FAILED) : r.get()));
        }
        // The revalidation replaced the stale bytes between the answer and this read: the
        // store now holds the fresh copy.
        Optional<StoredArtifact> current = node.store().lookup(key);
        if (current.isEmpty()) {
          return done(failed(repo, text(502, "stored bytes of this artifact are missing or corrupt")));
        }
        return responses.stored(request, Via.HIT, current.get(), gzip)
            .thenApply(c -> c.isPresent() ? served(repo, Via.HIT, c.get())
                : failed(repo, text(502, "stored bytes of this artifact are missing or corrupt")));
      });
    }
    if (reply instanceof Reply.Streaming s) {
      var growing = node.downloads().find(s.downloadId());
      if (growing.isPresent()) {
        // A reader that starts after the download ended reads the committed bytes (GrowingBlob).
        HttpResponse r = responses.streaming(request, s.via(), 200, s.headers(), s.length(), growing.get());
        return done(served(repo, s.via(), warned(s.headers(),
            gzip == null ? r : r.addHeader(ArtifactResponses.VARY_ENCODING))));
      }
      // The download ended between the reply and now: serve what it committed, if anything.
      Optional<StoredArtifact> stored = node.store().lookup(key);
      if (stored.isPresent()) {
        return responses.stored(request, s.via(), stored.get(), gzip)
            .thenApply(r -> r.isPresent() ? served(repo, s.via(), r.get())
                : failed(repo, text(502, "upstream transfer failed")));
      }
      return done(failed(repo, text(502, "upstream transfer failed")));
    }
    if (reply instanceof Reply.NotFound nf) {
      return done(served(repo, nf.via(), text(nf.gone() ? 410 : 404, "not found upstream")
          .addHeader(RawHeader.create("X-Cache", nf.via().name()))));
    }
    if (reply instanceof Reply.Failed f) {
      return done(failed(repo, text(status(f.cause()), f.reason())));
    }
    return done(failed(repo, text(502, "unexpected answer: " + reply.getClass().getSimpleName())));
  }

  /** A STALE answer relayed from another node whose last revalidation failed says so, as a local one does. */
  private static HttpResponse warned(List<Header> headers, HttpResponse response) {
    return Reply.saysRevalidationFailed(headers) ? response.addHeader(REVALIDATION_FAILED) : response;
  }

  /** The status a client gets for a failed fetch. */
  static int status(Failure cause) {
    return switch (cause) {
      case UPSTREAM_TIMEOUT -> 504;
      case TOO_MANY_WAITERS, UPSTREAM_BUSY -> 503;
      case UPSTREAM_ERROR, BAD_BYTES, PEER_ERROR, INTERNAL -> 502;
    };
  }

  private Served served(String repo, Via via, HttpResponse response) {
    return new Served(via, counts.count(repo, via, response));
  }

  private Served failed(String repo, HttpResponse response) {
    return new Served(null, counts.count(repo, "error", response));
  }

  private static CompletionStage<Served> done(Served served) {
    return CompletableFuture.completedFuture(served);
  }
}
