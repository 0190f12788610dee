package dev.corral.cluster;

/**
 * What the peer copy channel reports for metrics: each transfer of a blob or a growing download
 * between this node and another, once it has ended (and each one this node sends as it begins, so
 * that the uploads in progress can be told). The cluster module knows no metrics library;
 * the node's wiring implements this with its metrics (the pattern of core's {@code FetchEvents}).
 *
 * <p>Contract: called on stream and HTTP client threads, so an implementation must be thread-safe,
 * fast and non-blocking, and must not throw. Each transfer is reported exactly once.
 */
public interface PeerTransfers {
  /** Reports nothing. */
  PeerTransfers NONE = new PeerTransfers() {};

  /** How a transfer ended. */
  enum Result {
    /** Every byte it was to carry went through. */
    OK("ok"),
    /** Broken, short, refused (any status but 200, 206 and 404) or the peer not reachable. */
    FAILED("failed"),
    /** The peer did not hold it (404). */
    NOT_FOUND("not-found");

    private final String label;

    Result(String label) {
      this.label = label;
    }

    /** The metric label. */
    public String label() {
      return label;
    }
  }

  /**
   * This node's {@link PeerEndpoint} begins to send a transfer's body; {@link #sendingEnded} follows
   * when it ends (then {@link #sent}). A refusal that sends no body is told by {@link #sent} alone.
   */
  default void sending() {}

  /** The body {@link #sending} announced has ended, however. */
  default void sendingEnded() {}

  /** This node's {@link PeerEndpoint} served a transfer that carried {@code bytes} body bytes. */
  default void sent(Result result, long bytes) {}

  /** This node read a transfer from a peer ({@link HttpPeerBlobs}) that carried {@code bytes} body bytes. */
  default void received(Result result, long bytes) {}
}
