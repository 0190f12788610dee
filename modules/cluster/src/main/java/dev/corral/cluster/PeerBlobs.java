package dev.corral.cluster;

import dev.corral.core.upstream.UpstreamResponse;
import java.util.concurrent.CompletionStage;

/**
 * Reads bytes another node holds from its {@link PeerEndpoint} ({@link HttpPeerBlobs}; a fake in
 * tests). The stage completes once the status and headers are known; the body fails, never ends
 * early, when the transfer breaks.
 */
public interface PeerBlobs {
  /**
   * GETs {@code peerUrl + path} from byte {@code offset} on: when it is over 0, with {@code Range:
   * bytes=<offset>-} (answered 206 with a Content-Range).
   */
  CompletionStage<UpstreamResponse> get(String peerUrl, String path, long offset);

  /** DELETEs {@code peerUrl + path}; completes with the status (the body is discarded). */
  default CompletionStage<Integer> delete(String peerUrl, String path) {
    return java.util.concurrent.CompletableFuture.failedFuture(new UnsupportedOperationException("delete"));
  }

  /**
   * DELETEs {@code peerUrl + path} and completes with the body of a 200 answer as text; fails on
   * any other status, or when the answer is larger than {@code maxBytes}.
   */
  default CompletionStage<String> deleteRead(String peerUrl, String path, int maxBytes) {
    return java.util.concurrent.CompletableFuture.failedFuture(new UnsupportedOperationException("delete"));
  }
}
