package dev.corral.cluster;

import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamResponse;
import dev.corral.core.upstream.ExactLength;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ClientConnectionSettings;
import org.apache.pekko.http.javadsl.settings.ConnectionPoolSettings;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * Reads blobs and downloads from other nodes' {@link PeerEndpoint}s with the Pekko HTTP client.
 * A peer that cannot be reached fails fast (2 s to connect), so that the next holder or the
 * upstream is tried; a body that stops for 60 s, or ends short of its Content-Length, fails.
 */
public final class HttpPeerBlobs implements PeerBlobs {
  private static final Duration CONNECT = Duration.ofSeconds(2);
  private static final Duration IDLE = Duration.ofSeconds(60);

  private final ActorSystem<?> system;
  private final Http http;
  private final ConnectionPoolSettings pool;
  private final HttpsConnectionContext https;
  private final PeerTransfers transfers;

  /** Plain HTTP, or HTTPS to peers' default-trusted certificates (no cluster identity). */
  public HttpPeerBlobs(ActorSystem<?> system) {
    this(system, Optional.empty());
  }

  /**
   * With the cluster's identity, HTTPS peers must show a certificate from the cluster's CA, and
   * this node presents its own.
   */
  public HttpPeerBlobs(ActorSystem<?> system, Optional<ClusterTls> tls) {
    this(system, tls, PeerTransfers.NONE);
  }

  /** The same, telling each GET's transfer to {@code transfers} (a DELETE is not a transfer). */
  public HttpPeerBlobs(ActorSystem<?> system, Optional<ClusterTls> tls, PeerTransfers transfers) {
    this.system = system;
    this.transfers = transfers;
    this.http = Http.get(system);
    this.https = tls.map(t -> t.clientContext(system)).orElseGet(http::defaultClientHttpsContext);
    ConnectionPoolSettings defaults = ConnectionPoolSettings.create(Adapter.toClassic(system));
    ClientConnectionSettings connection = defaults.getConnectionSettings()
        .withConnectingTimeout(CONNECT)
        .withIdleTimeout(IDLE);
    this.pool = defaults
        .withMaxConnections(32)
        .withMaxOpenRequests(256)
        .withMaxRetries(0)
        .withResponseEntitySubscriptionTimeout(IDLE)
        .withConnectionSettings(connection);
  }

  @Override
  public CompletionStage<UpstreamResponse> get(String peerUrl, String path, long offset) {
    HttpRequest request = HttpRequest.GET(peerUrl + path);
    if (offset > 0) {
      request = request.addHeader(org.apache.pekko.http.javadsl.model.headers.RawHeader.create("Range", "bytes=" + offset + "-"));
    }
    return http.singleRequest(request, https, pool, system.classicSystem().log())
        .whenComplete((r, e) -> {
          if (e != null) {
            transfers.received(PeerTransfers.Result.FAILED, 0);
          }
        })
        .thenApply(this::toResponse);
  }

  @Override
  public CompletionStage<Integer> delete(String peerUrl, String path) {
    return http.singleRequest(HttpRequest.DELETE(peerUrl + path), https, pool, system.classicSystem().log())
        .thenApply(response -> {
          response.discardEntityBytes(system);
          return response.status().intValue();
        });
  }

  @Override
  public CompletionStage<String> deleteRead(String peerUrl, String path, int maxBytes) {
    return http.singleRequest(HttpRequest.DELETE(peerUrl + path), https, pool, system.classicSystem().log())
        .thenCompose(response -> {
          int status = response.status().intValue();
          if (status != 200) {
            response.discardEntityBytes(system);
            return java.util.concurrent.CompletableFuture.failedFuture(
                new IllegalStateException(peerUrl + " answered " + status));
          }
          return response.entity().withSizeLimit(maxBytes).toStrict(IDLE.toMillis(), system)
              .thenApply(strict -> strict.getData().utf8String());
        });
  }

  private UpstreamResponse toResponse(HttpResponse response) {
    OptionalLong length = response.entity().getContentLengthOption();
    Source<ByteString, ?> bytes = response.entity().getDataBytes();
    if (length.isPresent()) {
      bytes = bytes.via(new ExactLength(length.getAsLong()));
    }
    Source<ByteString, NotUsed> body = bytes.idleTimeout(IDLE).mapMaterializedValue(m -> NotUsed.getInstance());
    int status = response.status().intValue();
    if (status == 200 || status == 206) {
      body = TransferWatch.watched(body, length.orElse(-1), transfers::received);
    } else {
      transfers.received(status == 404 ? PeerTransfers.Result.NOT_FOUND : PeerTransfers.Result.FAILED, 0);
    }
    List<Header> headers = new ArrayList<>();
    for (HttpHeader h : response.getHeaders()) {
      headers.add(new Header(h.name(), h.value()));
    }
    return new UpstreamResponse(status, headers, length, body);
  }
}
