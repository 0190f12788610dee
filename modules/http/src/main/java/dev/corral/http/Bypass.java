package dev.corral.http;

import static dev.corral.http.Answers.text;

import dev.corral.core.download.Downloads;
import dev.corral.core.download.FetchSource;
import dev.corral.core.download.FetchSources;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.javadsl.Sink;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The waiter's budget ran out and the repository allows it: one direct, uncached fetch for this
 * client (never stored, never shared), answered {@code X-Cache: BYPASS}. B1 has no opt-out: it
 * asks the URL and verifies against the digest a fetch of the key would ({@link FetchSources}),
 * and a body that does not match is cut before its last byte ({@link VerifiedBody}).
 */
final class Bypass {
  private static final Logger log = LoggerFactory.getLogger(Bypass.class);

  private final ActorSystem<?> system;
  private final Upstream upstream;
  private final Downloads downloads;
  private final RequestCounts counts;

  /** @param downloads whose {@link Downloads#sources} say what a fetch of a key asks and verifies against */
  Bypass(ActorSystem<?> system, Upstream upstream, Downloads downloads, RequestCounts counts) {
    this.system = system;
    this.upstream = upstream;
    this.downloads = downloads;
    this.counts = counts;
  }

  /** A client's request answered by a direct fetch: counted in {@code corral_requests_total}. */
  CompletionStage<HttpResponse> fetch(ArtifactKey key) {
    return fetch(key, true);
  }

  /**
   * A document a repository reads to resolve a client's request (a page, a packument, a
   * checksum), fetched directly: not counted, the client's request is counted once when answered.
   */
  CompletionStage<HttpResponse> lookup(ArtifactKey key) {
    return fetch(key, false);
  }

  private CompletionStage<HttpResponse> fetch(ArtifactKey key, boolean counted) {
    String repo = key.repo();
    RequestCounts counts = counted ? this.counts : null;
    List<Header> accept = key.variant().isEmpty() ? List.of() : List.of(new Header("Accept", key.variant()));
    CompletionStage<FetchSource> source;
    try {
      source = downloads.sources().of(key);
    } catch (RuntimeException e) {
      source = CompletableFuture.failedFuture(e);
    }
    Digest[] expected = {key.expected()};
    return source
        .thenCompose(s -> {
          if (expected[0] == null) {
            expected[0] = s.expected(); // a digest the key names is never replaced
          }
          return upstream.get(new UpstreamRequest(repo, s.url(), accept));
        })
        .thenApply(r -> {
          if (r.status() == 200) {
            var type = ArtifactResponses.contentType(r.headers());
            var body = expected[0] == null ? r.body()
                : r.body().via(VerifiedBody.of(expected[0], "bypass fetch of " + key));
            var entity = r.contentLength().isPresent()
                ? HttpEntities.create(type, r.contentLength().getAsLong(), body)
                : HttpEntities.createChunked(type, body);
            return count(counts, repo, "bypass", HttpResponse.create().withEntity(entity)
                .addHeader(RawHeader.create("X-Cache", "BYPASS")));
          }
          r.body().runWith(Sink.cancelled(), system);
          if (r.status() == 404 || r.status() == 410) {
            return count(counts, repo, "bypass", text(r.status(), "not found upstream")
                .addHeader(RawHeader.create("X-Cache", "BYPASS")));
          }
          return count(counts, repo, "error", text(502, "upstream answered " + r.status()));
        })
        .exceptionally(e -> {
          Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          boolean timeout = t instanceof UpstreamException u && u.isTimeout()
              || t instanceof FetchSources.Unavailable a && a.isTimeout();
          log.warn("bypass fetch of {} failed: {}", key, t.toString());
          return count(counts, repo, "error", text(timeout ? 504 : 502, "upstream error: " + t.getMessage()));
        });
  }

  private static HttpResponse count(RequestCounts counts, String repo, String result, HttpResponse response) {
    return counts == null ? response : counts.count(repo, result, response);
  }
}
