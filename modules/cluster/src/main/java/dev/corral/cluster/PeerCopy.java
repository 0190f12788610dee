package dev.corral.cluster;

import dev.corral.core.fetch.Peers;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One blob (or one running download) as other nodes give it, as an {@link dev.corral.core.upstream.Upstream}: the holders
 * are asked in order, and the first that answers 200 with its exact length gives the bytes. When
 * its transfer breaks, the body goes on from the byte where it broke with a {@code Range} request:
 * to the same holder first (a dropped connection), then to the next ones, each asked once. A rest
 * that does not start at that byte, or is not exactly the remaining length, fails the body. The
 * downloader hashes and checks the whole (SEMANTICS L3, B1), so a holder can never make this node
 * store other bytes. The request's URL is not used: this upstream gives only its one blob. It
 * remembers every holder it asked ({@link #asked}), so that a copy that failed drops them.
 */
final class PeerCopy implements Peers.HolderCopy {
  private static final Logger log = LoggerFactory.getLogger(PeerCopy.class);

  private final PeerBlobs client;
  /** A node and the path of the bytes on its peer endpoint. */
  record At(String peerUrl, String path) {}

  private final List<String> holders;
  private final List<String> paths;
  private final ActorSystem<?> system;
  /** Guarded by itself. */
  private final List<String> asked = new ArrayList<>();

  PeerCopy(PeerBlobs client, List<String> holders, String path, ActorSystem<?> system) {
    this(client, holders.stream().map(h -> new At(h, path)).toList(), system);
  }

  /** Each node with its own path: a committed blob, or a download still arriving there (issue 17). */
  PeerCopy(PeerBlobs client, List<At> sources, ActorSystem<?> system) {
    this.client = client;
    this.holders = sources.stream().map(At::peerUrl).toList();
    this.paths = sources.stream().map(At::path).toList();
    this.system = system;
  }

  @Override
  public CompletionStage<UpstreamResponse> get(UpstreamRequest request) {
    return from(0, request);
  }

  @Override
  public List<String> asked() {
    synchronized (asked) {
      return List.copyOf(asked);
    }
  }

  private void asking(String holder) {
    synchronized (asked) {
      if (!asked.contains(holder)) {
        asked.add(holder);
      }
    }
  }

  private CompletionStage<UpstreamResponse> from(int i, UpstreamRequest request) {
    if (i >= holders.size()) {
      return CompletableFuture.failedFuture(new IOException("no holder gave " + paths));
    }
    String holder = holders.get(i);
    String path = paths.get(i);
    asking(holder);
    CompletionStage<UpstreamResponse> first;
    try {
      first = client.get(holder, path, 0);
    } catch (RuntimeException e) {
      first = CompletableFuture.failedFuture(e);
    }
    return first
        .handle((response, error) -> {
          if (error == null && response.status() == 200 && response.contentLength().isPresent()) {
            long total = response.contentLength().getAsLong();
            return CompletableFuture.completedFuture(new UpstreamResponse(200, response.headers(),
                response.contentLength(), resumable(response.body(), i, total)));
          }
          if (response != null) {
            response.body().runWith(Sink.cancelled(), system);
          }
          log.info("holder {} could not give {} for {}: {}", holder, path, withoutQuery(request.url()),
              error != null ? unwrap(error).toString() : "status " + response.status());
          return from(i + 1, request);
        })
        .thenCompose(next -> next);
  }

  /** An upstream URL as logged: its query may carry a pre-signed URL's signature. */
  private static String withoutQuery(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?...";
  }

  private Source<ByteString, NotUsed> resumable(Source<ByteString, NotUsed> body, int from, long total) {
    AtomicLong received = new AtomicLong();
    AtomicInteger attempt = new AtomicInteger();
    int count = holders.size();
    return counted(body, received).recoverWithRetries(count, Throwable.class, () -> {
      long offset = received.get();
      int at = (from + attempt.getAndIncrement()) % count;
      String holder = holders.get(at);
      String path = paths.get(at);
      log.info("copy of {} broke at byte {} of {}; resuming from {}", path, offset, total, holder);
      asking(holder);
      CompletionStage<Source<ByteString, NotUsed>> rest = client.get(holder, path, offset).thenApply(r -> {
        boolean fits = r.status() == 206
            && r.header("Content-Range").orElse("").startsWith("bytes " + offset + "-")
            && r.contentLength().orElse(-1) == total - offset;
        if (!fits) {
          r.body().runWith(Sink.cancelled(), system);
          throw new CompletionException(new IOException("holder " + holder + " cannot resume at " + offset
              + " (status " + r.status() + ")"));
        }
        return counted(r.body(), received);
      });
      return Source.completionStageSource(rest).mapMaterializedValue(m -> NotUsed.getInstance());
    });
  }

  private static Source<ByteString, NotUsed> counted(Source<ByteString, NotUsed> body, AtomicLong received) {
    return body.map(b -> {
      received.addAndGet(b.size());
      return b;
    });
  }

  private static Throwable unwrap(Throwable e) {
    return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
  }
}
