package dev.corral.core.download;

import dev.corral.core.upstream.UpstreamResponse;
import java.util.concurrent.CompletionStage;

/**
 * Reads bytes another node holds, from that node's internal peer endpoint (SEMANTICS L3: a replica
 * is copied from a peer, not fetched from the upstream again). Implemented at the HTTP edge.
 *
 * <p>Paths under a peer's base URL: {@code /-/peer/blobs/<sha256>} (a committed, content-addressed
 * blob) and {@code /-/peer/downloads/<id>} (a large body the peer is still downloading, held back
 * by its last byte until verified). Both answer 200 with an exact {@code Content-Length}, or 206
 * for a {@code Range}, or 404 when the peer does not hold it (any more).
 */
public interface PeerBlobs {
  /**
   * GETs {@code peerUrl + path}. The stage completes once the status and headers are known; the
   * body fails, never ends early, when the transfer breaks.
   */
  default CompletionStage<UpstreamResponse> get(String peerUrl, String path) {
    return get(peerUrl, path, 0);
  }

  /**
   * GETs {@code peerUrl + path} from byte {@code offset} on: when it is over 0, with {@code Range:
   * bytes=<offset>-} (answered 206 with a Content-Range).
   */
  CompletionStage<UpstreamResponse> get(String peerUrl, String path, long offset);

  static String blobPath(String sha256) {
    return "/-/peer/blobs/" + sha256;
  }

  static String downloadPath(long downloadId) {
    return "/-/peer/downloads/" + downloadId;
  }
}
