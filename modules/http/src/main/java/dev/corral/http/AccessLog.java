package dev.corral.http;

import java.net.InetSocketAddress;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One line per request on the logger {@value #LOGGER} (turn it off in logback with
 * {@code <logger name="corral.access" level="OFF"/>}), written when the response head is ready:
 * <pre>
 * GET repo=npm path=/npm/left-pad status=200 cache=HIT bytes=1234 ms=3 client=127.0.0.1:51234 who=ci
 * </pre>
 * The path is as the client sent it (still percent-encoded, so no line break can get in), cut at
 * 1024 characters, and without its query (which may carry secrets); {@code bytes} is the body's
 * {@code Content-Length} ({@code -} when streamed without one); {@code who} is the name of the
 * credential the client presented (never the token), {@code -} without one.
 */
final class AccessLog {
  static final String LOGGER = "corral.access";
  private static final Logger log = LoggerFactory.getLogger(LOGGER);

  private AccessLog() {}

  static HttpResponse log(HttpRequest request, String path, String repo, HttpResponse response, long startedNanos,
      InetSocketAddress client, Optional<String> who) {
    if (!log.isInfoEnabled()) {
      return response;
    }
    var length = response.entity().getContentLengthOption();
    log.info("{} repo={} path={} status={} cache={} bytes={} ms={} client={} who={}",
        request.method().name(), repo.isEmpty() ? "-" : repo, path.length() > 1024 ? path.substring(0, 1024) + "..." : path, response.status().intValue(),
        response.getHeader("X-Cache").map(HttpHeader::value).orElse("-"),
        length.isPresent() ? String.valueOf(length.getAsLong()) : "-",
        (System.nanoTime() - startedNanos) / 1_000_000,
        client == null ? "-" : client.getHostString() + ":" + client.getPort(),
        who.orElse("-"));
    return response;
  }
}
