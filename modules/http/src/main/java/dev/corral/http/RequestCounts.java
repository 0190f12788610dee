package dev.corral.http;

import dev.corral.core.fetch.Via;
import dev.corral.http.metrics.Metrics;
import java.util.Arrays;
import java.util.Locale;
import org.apache.pekko.http.javadsl.model.HttpResponse;

/** Counts each answered request by repository and result ({@code corral_requests_total}). */
final class RequestCounts {
  /** Each Via's label, lower-cased once rather than per request. */
  private static final String[] RESULTS = Arrays.stream(Via.values())
      .map(v -> v.name().toLowerCase(Locale.ROOT)).toArray(String[]::new);

  private final Metrics metrics;

  RequestCounts(Metrics metrics) {
    this.metrics = metrics;
  }

  /** An answer with the bytes: counted by how it was served, coalesced ones also on their own. */
  HttpResponse count(String repo, Via via, HttpResponse response) {
    if (via == Via.COALESCED) {
      metrics.coalesced.labelValues(repo).inc();
    }
    return count(repo, RESULTS[via.ordinal()], response);
  }

  /** Any other answer: {@code error}, {@code rejected}, {@code bypass}, {@code hit} (made here). */
  HttpResponse count(String repo, String result, HttpResponse response) {
    metrics.requests.labelValues(repo, result).inc();
    return response;
  }

  /** A request refused because the node's metadata memory had no room ({@code corral_metadata_shed_total}). */
  void shed(String repo) {
    metrics.metadataShed.labelValues(repo).inc();
  }

  /** A miss refused by the per-client miss rate limit ({@code corral_miss_rate_limited_total}). */
  void limited(String repo) {
    metrics.missRateLimited.labelValues(repo).inc();
  }

  /** A group's member that failed to answer a request of the group ({@code corral_group_member_failures_total}). */
  void memberFailed(String group, String member) {
    metrics.groupMemberFailures.labelValues(group, member).inc();
  }
}
