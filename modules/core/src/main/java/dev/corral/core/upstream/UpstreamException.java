package dev.corral.core.upstream;

/**
 * Every attempt of a fetch failed. {@link #reason()} is the metrics label of the last attempt:
 * an HTTP status such as {@code 503}, or {@code timeout}, {@code connect-error}, {@code reset}.
 */
public final class UpstreamException extends RuntimeException {
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
}
