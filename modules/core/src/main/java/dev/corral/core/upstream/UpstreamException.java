package dev.corral.core.upstream;

/**
 * Every attempt of a fetch failed. {@link #reason()} is the metrics label of the last attempt:
 * an HTTP status such as {@code 503}, or {@code timeout}, {@code connect-error}, {@code reset}.
 */
public final class UpstreamException extends RuntimeException {
  /**
   * The reason of a request refused before it was sent: the upstream's queue of requests waiting
   * for a connection is full (SEMANTICS K2's bounded queue). The client gets 503.
   */
  public static final String QUEUE_FULL = "queue-full";

  private final String reason;
  private final boolean timeout;

  public UpstreamException(String reason, String message, boolean timeout, Throwable cause) {
    super(message, cause);
    this.reason = reason;
    this.timeout = timeout;
  }

  public String reason() {
    return reason;
  }

  /** True when the final failure was a timeout (the client then gets 504 instead of 502). */
  public boolean isTimeout() {
    return timeout;
  }

  /** True when the request was never sent because the upstream's queue was full ({@link #QUEUE_FULL}). */
  public boolean isQueueFull() {
    return QUEUE_FULL.equals(reason);
  }
}
