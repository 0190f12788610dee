package dev.corral.server;

import dev.corral.cluster.PeerTransfers;
import dev.corral.http.metrics.Metrics;
import io.prometheus.metrics.core.datapoints.CounterDataPoint;

/**
 * The cluster module's {@link PeerTransfers} told to the node's metrics:
 * {@code corral_peer_transfers_total} and {@code corral_peer_transfer_bytes_total}, by direction
 * and result (each label pair resolved once).
 */
final class PeerTransferMetrics implements PeerTransfers {
  private static final Result[] RESULTS = Result.values();
  private final CounterDataPoint[] sentCount = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] sentBytes = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] receivedCount = new CounterDataPoint[RESULTS.length];
  private final CounterDataPoint[] receivedBytes = new CounterDataPoint[RESULTS.length];

  PeerTransferMetrics(Metrics metrics) {
    for (Result r : RESULTS) {
      sentCount[r.ordinal()] = metrics.peerTransfers.labelValues("sent", r.label());
      sentBytes[r.ordinal()] = metrics.peerTransferBytes.labelValues("sent", r.label());
      receivedCount[r.ordinal()] = metrics.peerTransfers.labelValues("received", r.label());
      receivedBytes[r.ordinal()] = metrics.peerTransferBytes.labelValues("received", r.label());
    }
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
