package dev.corral.core.upstream;

import java.util.List;

/**
 * One upstream GET.
 *
 * @param repo the repository (for metrics, credentials and per-repository settings)
 * @param url the absolute upstream URL
 * @param headers extra request headers, such as {@code Accept} for a variant or conditional
 *     validators for a revalidation; never client headers passed through blindly
 */
public record UpstreamRequest(String repo, String url, List<Header> headers) {
  public UpstreamRequest {
    headers = headers == null ? List.of() : List.copyOf(headers);
  }

  public static UpstreamRequest get(String repo, String url) {
    return new UpstreamRequest(repo, url, List.of());
  }
}
