package dev.corral.core.fetch;

import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * An in-process upstream for entity tests: counts requests per URL and answers each with
 * whatever the test's script returns, so a test can hold a fetch open (an uncompleted future)
 * for as long as it needs waiters to pile up. A script set for one URL ({@link #on}) wins over
 * the default {@link #script}, so tests sharing one upstream do not disturb each other.
 */
final class ScriptedUpstream implements Upstream {
  final ConcurrentHashMap<String, AtomicInteger> counts = new ConcurrentHashMap<>();
  final ConcurrentLinkedQueue<String> requested = new ConcurrentLinkedQueue<>();
  /** Every request, headers included, in arrival order. */
  final ConcurrentLinkedQueue<UpstreamRequest> requests = new ConcurrentLinkedQueue<>();
  private final Map<String, Function<UpstreamRequest, CompletionStage<UpstreamResponse>>> byUrl =
      new ConcurrentHashMap<>();
  volatile Function<UpstreamRequest, CompletionStage<UpstreamResponse>> script =
      r -> CompletableFuture.completedFuture(ok(ByteString.fromString("body of " + r.url())));

  @Override
  public CompletionStage<UpstreamResponse> get(UpstreamRequest request) {
    counts.computeIfAbsent(request.url(), u -> new AtomicInteger()).incrementAndGet();
    requested.add(request.url());
    requests.add(request);
    return byUrl.getOrDefault(request.url(), script).apply(request);
  }

  /** Answers requests for {@code url} with {@code answer}. */
  void on(String url, Function<UpstreamRequest, CompletionStage<UpstreamResponse>> answer) {
    byUrl.put(url, answer);
  }

  /** Every request for {@code url} gets the returned future: the fetch is held until the test completes it. */
  CompletableFuture<UpstreamResponse> hold(String url) {
    CompletableFuture<UpstreamResponse> gate = new CompletableFuture<>();
    on(url, r -> gate);
    return gate;
  }

  /** Every request for {@code url} is answered 200 with {@code body} at once. */
  void serve(String url, ByteString body) {
    on(url, r -> CompletableFuture.completedFuture(ok(body)));
  }

  int count(String url) {
    AtomicInteger c = counts.get(url);
    return c == null ? 0 : c.get();
  }

  /** The requests for {@code url}, in arrival order. */
  List<UpstreamRequest> requests(String url) {
    return requests.stream().filter(r -> r.url().equals(url)).toList();
  }

  int total() {
    return counts.values().stream().mapToInt(AtomicInteger::get).sum();
  }

  static UpstreamResponse ok(ByteString body) {
    return new UpstreamResponse(200, List.of(new Header("Content-Type", "application/octet-stream")),
        OptionalLong.of(body.size()), Source.single(body));
  }

  static UpstreamResponse of(int status, Source<ByteString, NotUsed> body, OptionalLong length) {
    return new UpstreamResponse(status, List.of(), length, body);
  }
}
