package dev.corral.server;

import dev.corral.cluster.PeerTransfers;
import dev.corral.http.metrics.Metrics;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;

/**
 * The cluster module's {@link PeerTransfers} told to the node's metrics:
 * {@code corral_peer_copies_sent_total}, {@code corral_peer_copies_received_total},
 * {@code corral_peer_sent_bytes_total} and {@code corral_peer_received_bytes_total} by result (each
 * label resolved once) and {@code corral_peer_uploads_in_progress}.
 */
final class PeerTransferMetrics implements PeerTransfers {
  private static final Result[] RESULTS = Result.values();
  private final CounterDataPoint[] sentCount = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] sentBytes = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] receivedCount = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] receivedBytes = new CounterDataPoint[RESULTS.length];

  private final io.prometheus.metrics.core.metrics.Gauge uploads;
  /** The uploads in progress as the gauge counts them, and the most there ever were at once. */
  private final java.util.concurrent.atomic.AtomicInteger now = new java.util.concurrent.atomic.AtomicInteger();
  private final java.util.concurrent.atomic.AtomicInteger most = new java.util.concurrent.atomic.AtomicInteger();

  PeerTransferMetrics(Metrics metrics) {
    for (Result r : RESULTS) {
      sentCount[r.ordinal()] = metrics.peerCopiesSent.labelValues(r.label());
      sentBytes[r.ordinal()] = metrics.peerSentBytes.labelValues(r.label());
      receivedCount[r.ordinal()] = metrics.peerCopiesReceived.labelValues(r.label());
      receivedBytes[r.ordinal()] = metrics.peerReceivedBytes.labelValues(r.label());
    }
    uploads = metrics.peerUploads;
  }

  /** The copies this node's peer endpoint is sending now. */
  int uploadsNow() {
    return now.get();
  }

  /** The most copies this node's peer endpoint ever sent at once (the gauge's high-water mark). */
  int mostUploadsAtOnce() {
    return most.get();
  }

  @Override
  public void sending() {
    most.accumulateAndGet(now.incrementAndGet(), Math::max);
    uploads.inc();
  }

  @Override
  public void sendingEnded() {
    now.decrementAndGet();
    uploads.dec();
  }

  @Override
  public void sent(Result result, long bytes) {
    sentCount[result.ordinal()].inc();
    sentBytes[result.ordinal()].inc(bytes);
  }

  @Override
  public void received(Result result, long bytes) {
    receivedCount[result.ordinal()].inc();
    receivedBytes[result.ordinal()].inc(bytes);
  }
}
