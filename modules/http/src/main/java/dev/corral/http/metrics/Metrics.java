package dev.corral.http.metrics;

import dev.corral.core.fetch.FetchEvents;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * The Prometheus metrics named in SEMANTICS.md (Observability), fed by core through
 * {@link FetchEvents} and by the front door and upstream client directly. One instance per node,
 * each with its own registry so that several nodes in one JVM (tests) never share counters; a
 * scrape ({@link #scrape}) shows that registry and the process's JVM metrics ({@link JvmRegistry}).
 * The store's and the cluster's gauges are registered by whoever holds them ({@link StoreGauges},
 * {@link ClusterGauges}).
 */
public final class Metrics implements FetchEvents {
  private final PrometheusRegistry registry = new PrometheusRegistry();

  /** {@code corral_inflight_fetches{repo}}: fetches running on this node. */
  public final Gauge inflightFetches =
      Gauge.builder()
          .name("corral_inflight_fetches")
          .help("Upstream fetches in flight on this node")
          .labelNames("repo")
          .register(registry);

  /** {@code corral_coalesced_total{repo}}: requests answered from another request's fetch. */
  public final Counter coalesced =
      Counter.builder()
          .name("corral_coalesced_total")
          .help("Requests that joined another request's fetch")
          .labelNames("repo")
          .register(registry);

  /** {@code corral_fallthrough_total{repo,reason}}: waiters that gave up waiting (budget, entity-stopped). */
  public final Counter fallthrough =
      Counter.builder()
          .name("corral_fallthrough_total")
          .help("Waiters that stopped waiting for a shared fetch, by reason")
          .labelNames("repo", "reason")
          .register(registry);

  /** {@code corral_upstream_requests_total{repo,status}}: one per upstream attempt. */
  public final Counter upstreamRequests =
      Counter.builder()
          .name("corral_upstream_requests_total")
          .help("Upstream request attempts, retries included, by HTTP status or failure")
          .labelNames("repo", "status")
          .register(registry);

  /**
   * {@code corral_upstream_token_fetches_total{repo,outcome}}: registry token requests to a token
   * realm, by outcome: {@code ok}, {@code refused} (the realm is outside the repository's scope),
   * {@code invalid} (no usable token in the answer), the realm's HTTP status, or the failure
   * ({@code timeout}, {@code connect-error}, {@code reset}, {@code redirect}).
   */
  public final Counter upstreamTokenFetches =
      Counter.builder()
          .name("corral_upstream_token_fetches_total")
          .help("Registry token requests to an upstream's token realm, by outcome")
          .labelNames("repo", "outcome")
          .register(registry);

  /**
   * {@code corral_unverified_fetches_total{repo}}: upstream downloads of keys that are verified
   * (Maven release files) made without a digest, since the upstream publishes no checksum for them.
   */
  public final Counter unverifiedFetches =
      Counter.builder()
          .name("corral_unverified_fetches_total")
          .help("Upstream downloads of verifiable files made unverified: the upstream published no checksum")
          .labelNames("repo")
          .register(registry);

  /** {@code corral_requests_total{repo,result}}: one per request answered by this node. */
  public final Counter requests =
      Counter.builder()
          .name("corral_requests_total")
          .help("Requests answered by this node, by X-Cache result, error or rejected")
          .labelNames("repo", "result")
          .register(registry);

  /** {@code corral_upstream_fetch_seconds{repo}}: duration of whole fetches. */
  public final Histogram upstreamFetchSeconds =
      Histogram.builder()
          .name("corral_upstream_fetch_seconds")
          .help("Duration of upstream fetches, from start to committed or failed")
          .labelNames("repo")
          .register(registry);

  /**
   * {@code corral_metadata_shed_total{repo}}: requests answered 503 because the node's metadata
   * memory ({@code --metadata-memory}) had no room for their body within the wait.
   */
  public final Counter metadataShed =
      Counter.builder()
          .name("corral_metadata_shed_total")
          .help("Requests refused with 503 because the metadata memory budget was full")
          .labelNames("repo")
          .register(registry);

  /**
   * {@code corral_miss_rate_limited_total{repo}}: misses refused with 429 by the per-client
   * miss rate limit ({@code --miss-rate-limit}).
   */
  public final Counter missRateLimited =
      Counter.builder()
          .name("corral_miss_rate_limited_total")
          .help("Requests that would have gone upstream, refused with 429 by the per-client miss rate limit")
          .labelNames("repo")
          .register(registry);

  /**
   * {@code corral_group_member_failures_total{group,member}}: a group's member that could not
   * answer one of the group's requests (an upstream error or timeout); the group answered from
   * the others when one could, with a {@code Warning} header naming the member.
   */
  public final Counter groupMemberFailures =
      Counter.builder()
          .name("corral_group_member_failures_total")
          .help("Group requests one of whose members failed (error or timeout); the others were asked")
          .labelNames("group", "member")
          .register(registry);

  /** {@code corral_http_connections}: client connections held open, at most max-connections. */
  public final Gauge httpConnections =
      Gauge.builder()
          .name("corral_http_connections")
          .help("Client connections this node holds open (at most max-connections; more wait in the accept backlog)")
          .register(registry);

  /**
   * {@code corral_http_requests_in_flight}: client requests taken and not yet fully answered (a
   * streamed body counts until its last byte is sent or the transfer ends).
   */
  public final Gauge httpRequestsInFlight =
      Gauge.builder()
          .name("corral_http_requests_in_flight")
          .help("Client requests being answered, until the response's last byte")
          .register(registry);

  /** {@code corral_http_response_seconds{repo,cache}}: see {@link ResponseTimes}. */
  private final Histogram httpResponseSeconds =
      Histogram.builder()
          .name("corral_http_response_seconds")
          .help("Time from a request's arrival to its response head, by repository and X-Cache")
          .labelNames("repo", "cache")
          .classicOnly()
          .classicUpperBounds(ResponseTimes.BUCKETS)
          .register(registry);

  /**
   * {@code corral_peer_copies_sent_total{result}} and {@code corral_peer_copies_received_total{result}}:
   * copies of bytes (a committed blob or a download in progress, whole or a resumed range) this
   * node's peer endpoint sent to another node, or this node read from another, by how they ended:
   * {@code ok}, {@code failed} (broken, short, refused or unreachable) or {@code not-found}.
   */
  public final Counter peerCopiesSent =
      Counter.builder()
          .name("corral_peer_copies_sent_total")
          .help("Copies of a blob or a running download this node sent to other nodes, by result")
          .labelNames("result")
          .register(registry);

  public final Counter peerCopiesReceived =
      Counter.builder()
          .name("corral_peer_copies_received_total")
          .help("Copies of a blob or a running download this node read from other nodes, by result")
          .labelNames("result")
          .register(registry);

  /** {@code corral_peer_sent_bytes_total{result}}, {@code corral_peer_received_bytes_total{result}}: their body bytes. */
  public final Counter peerSentBytes =
      Counter.builder()
          .name("corral_peer_sent_bytes_total")
          .help("Body bytes this node sent to other nodes (peer egress), by the copy's result")
          .labelNames("result")
          .register(registry);

  public final Counter peerReceivedBytes =
      Counter.builder()
          .name("corral_peer_received_bytes_total")
          .help("Body bytes this node read from other nodes, by the copy's result")
          .labelNames("result")
          .register(registry);

  /** {@code corral_peer_uploads_in_progress}: copies this node's peer endpoint is sending now. */
  public final Gauge peerUploads =
      Gauge.builder()
          .name("corral_peer_uploads_in_progress")
          .help("Copies this node is sending to other nodes now")
          .register(registry);

  /** {@code corral_peer_upload_waits_total}: other nodes' copies that waited at this node's entities for an upload slot. */
  public final Counter peerUploadWaits =
      Counter.builder()
          .name("corral_peer_upload_waits_total")
          .help("Copies by other nodes that waited at this node's fetch entities for a source with a free upload slot")
          .register(registry);

  /** {@code corral_peer_upload_wait_seconds}: how long those waits lasted. */
  public final Histogram peerUploadWaitSeconds =
      Histogram.builder()
          .name("corral_peer_upload_wait_seconds")
          .help("How long other nodes' copies waited at this node's fetch entities for an upload slot")
          .register(registry);

  /** {@code corral_http_head_timeouts_total{phase}}: connections closed for a request head not complete in time. */
  public final Counter httpHeadTimeouts =
      Counter.builder()
          .name("corral_http_head_timeouts_total")
          .help("Client connections closed because a request head was not complete in time:"
              + " first-request (header-read-timeout) or next-request (idle-timeout)")
          .labelNames("phase")
          .register(registry);

  /** Each repository's upstream queue, read when the metrics are scraped. */
  private final Map<String, IntSupplier> upstreamQueues = new ConcurrentHashMap<>();

  /**
   * {@code corral_upstream_queued_requests{repo}}: upstream requests waiting for a connection of
   * their repository's pool ({@code max-connections} are busy; K2: queued, never failed, up to
   * the queue's limit).
   */
  public final GaugeWithCallback upstreamQueued =
      GaugeWithCallback.builder()
          .name("corral_upstream_queued_requests")
          .help("Upstream requests waiting for a free connection of their repository's pool (max-connections busy)")
          .labelNames("repo")
          .callback(cb -> upstreamQueues.forEach((repo, waiting) -> cb.call(waiting.getAsInt(), repo)))
          .register(registry);

  /** The upstream client reports a repository's queue through this (read at each scrape). */
  public void upstreamQueue(String repo, IntSupplier waiting) {
    upstreamQueues.put(repo, waiting);
  }

  /** What runs before each scrape (asks that bring gauges up to date); each completes, never fails. */
  private final List<Supplier<CompletionStage<?>>> beforeScrape = new CopyOnWriteArrayList<>();

  /** Adds an ask to run before each scrape; its stage must complete, within a second or so. */
  public void beforeScrape(Supplier<CompletionStage<?>> refresh) {
    beforeScrape.add(refresh);
  }

  /**
   * Shows every repository's counters at 0 from the start (rather than only after their first
   * event), so that a rate over them is 0, not missing: per repository the requests ({@code hit},
   * {@code miss}), coalesced, fall-throughs by reason, fetches in flight and their duration, upstream
   * requests ({@code 200}), unverified fetches, shed and rate-limited requests; and the head
   * timeouts by phase.
   */
  public void showAtZero(Set<String> repos) {
    for (String repo : repos) {
      requests.labelValues(repo, "hit");
      requests.labelValues(repo, "miss");
      coalesced.labelValues(repo);
      for (FallThrough reason : FallThrough.values()) {
        fallthrough.labelValues(repo, reason.label());
      }
      inflightFetches.labelValues(repo);
      upstreamFetchSeconds.labelValues(repo);
      upstreamRequests.labelValues(repo, "200");
      unverifiedFetches.labelValues(repo);
      metadataShed.labelValues(repo);
      missRateLimited.labelValues(repo);
    }
    httpHeadTimeouts.labelValues("first-request");
    httpHeadTimeouts.labelValues("next-request");
  }

  /** The response-time histogram's data points for these configured repositories. */
  public ResponseTimes responseTimes(Set<String> repos) {
    return new ResponseTimes(httpResponseSeconds, repos);
  }

  /** This node's own registry (not the JVM's metrics: {@link #scrape} adds those). */
  public PrometheusRegistry registry() {
    return registry;
  }

  /** Everything {@code /-/metrics} shows, once every {@link #beforeScrape} ask has completed. */
  public CompletionStage<MetricSnapshots> scrape() {
    CompletableFuture<?>[] asks = beforeScrape.stream()
        .map(a -> a.get().toCompletableFuture())
        .toArray(CompletableFuture[]::new);
    return CompletableFuture.allOf(asks).handle((v, e) -> {
      List<MetricSnapshot> all = new ArrayList<>();
      registry.scrape().forEach(all::add);
      JvmRegistry.get().scrape().forEach(all::add);
      return new MetricSnapshots(all);
    });
  }

  // ---- FetchEvents: what core reports ---------------------------------------------------------

  @Override
  public void fetchStarted(String repo) {
    inflightFetches.labelValues(repo).inc();
  }

  @Override
  public void fetchCompleted(String repo, Duration took) {
    upstreamFetchSeconds.labelValues(repo).observe(took.toNanos() / 1e9);
  }

  @Override
  public void fetchEnded(String repo) {
    inflightFetches.labelValues(repo).dec();
  }

  @Override
  public void fetchUnverified(String repo) {
    unverifiedFetches.labelValues(repo).inc();
  }

  @Override
  public void peerUploadWaitStarted() {
    peerUploadWaits.inc();
  }

  @Override
  public void peerUploadWaitEnded(Duration waited) {
    peerUploadWaitSeconds.observe(waited.toNanos() / 1e9);
  }

  @Override
  public void fellThrough(String repo, FallThrough reason, int waiters) {
    fallthrough.labelValues(repo, reason.label()).inc(waiters);
  }
}
