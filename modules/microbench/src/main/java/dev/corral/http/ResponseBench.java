package dev.corral.http;

import dev.corral.core.fetch.Via;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.util.ByteString;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * Building a hit's answer from a body in memory ({@code ArtifactResponses.bytes}): the upstream
 * headers replayed, {@code X-Cache}, and the request's conditional and range headers answered.
 * One stored header list, as a stored artifact keeps it.
 */
@State(Scope.Benchmark)
public class ResponseBench extends HitPathBench {
  private final ArtifactResponses responses = new ArtifactResponses(null, new HotBlobs(0), Runnable::run);
  private final List<Header> stored = List.of(
      new Header("Content-Type", "application/octet-stream"),
      new Header("ETag", "\"5d41402abc4b2a76b9719d911017c592\""),
      new Header("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT"),
      new Header("Cache-Control", "public, max-age=300"),
      new Header("Content-Length", "1024"),
      new Header("Server", "upstream"));
  private final ByteString body = ByteString.fromArray(new byte[1024]);
  private final HttpRequest plain = HttpRequest.GET("/bench/blob/hot")
      .addHeader(RawHeader.create("Host", "127.0.0.1:8080"))
      .addHeader(RawHeader.create("User-Agent", "wrk"));
  private final HttpRequest revalidation = plain
      .addHeader(RawHeader.create("If-None-Match", "\"5d41402abc4b2a76b9719d911017c592\""));
  private final HttpRequest range = plain.addHeader(RawHeader.create("Range", "bytes=100-199"));

  @Benchmark
  public HttpResponse whole() {
    return responses.bytes(plain, Via.HIT, 200, stored, body);
  }

  @Benchmark
  public HttpResponse notModified() {
    return responses.bytes(revalidation, Via.HIT, 200, stored, body);
  }

  @Benchmark
  public HttpResponse partial() {
    return responses.bytes(range, Via.HIT, 200, stored, body);
  }
}
