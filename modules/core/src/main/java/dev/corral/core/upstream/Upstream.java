package dev.corral.core.upstream;

import java.util.concurrent.CompletionStage;

/**
 * The one upstream download of a fetch. Implementations own connection pooling, timeouts,
 * redirects, credentials and the fetch's own bounded retries (SEMANTICS W2: retries happen
 * inside the one fetch, never by the waiters).
 *
 * <p>The returned stage completes once the final attempt's status and headers are known; it
 * completes exceptionally with {@link UpstreamException} when every attempt failed. The body of
 * a successful response must be consumed or cancelled by the caller. The body source fails (it
 * never just ends) when the connection is reset, the idle-between-chunks timeout fires or the
 * body is shorter than its {@code Content-Length} (SEMANTICS B2).
 */
public interface Upstream {
  CompletionStage<UpstreamResponse> get(UpstreamRequest request);
}
