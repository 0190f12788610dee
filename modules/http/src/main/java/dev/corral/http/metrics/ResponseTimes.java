package dev.corral.http.metrics;

import dev.corral.core.fetch.Via;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Histogram;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * {@code corral_http_response_seconds{repo,cache}}: the time from a request's arrival to its
 * response head (status and headers ready; a streamed body still flows), by repository and
 * {@code X-Cache}. Every label pair is resolved once, here: an observation is a map read by a
 * string and an array index, and allocates nothing.
 *
 * <p>Label values are bounded: {@code repo} is a configured repository or {@value #NO_REPO} (the
 * {@code /-/} endpoints, an unknown repository, a rejected path); {@code cache} is a {@link Via}
 * name or {@value #NO_CACHE} (an answer without {@code X-Cache}: errors, rejections).
 */
public final class ResponseTimes {
  static final String NO_REPO = "-";
  static final String NO_CACHE = "none";
  /** From half a millisecond (a hit from memory) to a minute (a large miss's head behind a slow upstream). */
  static final double[] BUCKETS = {
      0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  private static final Via[] VIAS = Via.values();

  /** Per repository, one data point per {@link Via} ordinal and the last for {@value #NO_CACHE}. */
  private final Map<String, DistributionDataPoint[]> byRepo;
  private final DistributionDataPoint[] noRepo;

  ResponseTimes(Histogram histogram, Set<String> repos) {
    Map<String, DistributionDataPoint[]> points = new HashMap<>();
    for (String repo : repos) {
      points.put(repo, resolve(histogram, repo));
    }
    this.byRepo = Map.copyOf(points);
    this.noRepo = resolve(histogram, NO_REPO);
  }

  private static DistributionDataPoint[] resolve(Histogram histogram, String repo) {
    DistributionDataPoint[] row = new DistributionDataPoint[VIAS.length + 1];
    for (Via via : VIAS) {
      row[via.ordinal()] = histogram.labelValues(repo, via.name());
    }
    row[VIAS.length] = histogram.labelValues(repo, NO_CACHE);
    return row;
  }

  /**
   * One answered request: {@code repo} as the path named it (anything not configured counts as
   * {@value #NO_REPO}), {@code xCache} its {@code X-Cache} value or null.
   */
  public void observe(String repo, String xCache, long nanos) {
    DistributionDataPoint[] row = byRepo.getOrDefault(repo, noRepo);
    row[index(xCache)].observe(nanos / 1e9);
  }

  private static int index(String xCache) {
    if (xCache != null) {
      for (Via via : VIAS) {
        if (via.name().equals(xCache)) {
          return via.ordinal();
        }
      }
    }
    return VIAS.length;
  }
}
