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
 * {@code <logger name="corral.access" level="OFF"/>}), written when the response head is ready.
 * Its message is
 * <pre>
 * GET repo=npm path=/npm/left-pad status=200 cache=HIT bytes=1234 ms=3 client=127.0.0.1:51234 who=ci
 * </pre>
 * and the same facts ride along as SLF4J key-value pairs (the {@code KEY_...} names below, in
 * that order) for an encoder that writes its own format (the server's {@code --access-log}).
 * The path is as the client sent it (still percent-encoded, so no line break can get in), cut at
 * 1024 characters, and without its query (which may carry secrets); {@code bytes} is the body's
 * {@code Content-Length} ({@code -} in the message, absent as a pair, when streamed without one);
 * {@code who} is the name of the credential the client presented (never the token), {@code -}
 * without one.
 */
public final class AccessLog {
  public static final String LOGGER = "corral.access";
  /** The client's address (no port), a String. */
  public static final String KEY_CLIENT = "client";
  /** The client's port, an Integer; absent when unknown. */
  public static final String KEY_CLIENT_PORT = "client_port";
  public static final String KEY_METHOD = "method";
  /** The raw path, without the query. */
  public static final String KEY_PATH = "path";
  /** e.g. {@code HTTP/1.1}. */
  public static final String KEY_PROTOCOL = "protocol";
  /** The response status, an Integer. */
  public static final String KEY_STATUS = "status";
  /** The response's X-Cache header; absent without one. */
  public static final String KEY_CACHE = "cache";
  /** The body's Content-Length, a Long; absent when streamed without one. */
  public static final String KEY_BYTES = "bytes";
  /** Milliseconds from the request's arrival to its response head, a Long. */
  public static final String KEY_DURATION_MS = "duration_ms";
  /** The repository's name; absent for the node's own routes (/-/...). */
  public static final String KEY_REPO = "repo";
  /** The credential's NAME (never the token); absent without one. */
  public static final String KEY_USER = "user";
  /** The request's Referer and User-Agent headers; each absent without one. */
  public static final String KEY_REFERER = "referer";
  public static final String KEY_USER_AGENT = "user_agent";

  private static final Logger log = LoggerFactory.getLogger(LOGGER);

  private AccessLog() {}

  static HttpResponse log(HttpRequest request, String path, String repo, HttpResponse response, long startedNanos,
      InetSocketAddress client, Optional<String> who) {
    if (!log.isInfoEnabled()) {
      return response;
    }
    var length = response.entity().getContentLengthOption();
    String shownPath = path.length() > 1024 ? path.substring(0, 1024) + "..." : path;
    String method = request.method().name();
    int status = response.status().intValue();
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    Optional<String> cache = response.getHeader("x-cache").map(HttpHeader::value);
    long ms = (System.nanoTime() - startedNanos) / 1_000_000;
    String clientHost = client == null ? null : client.getHostString(); // formats the address on each call
    var line = log.atInfo();
    if (client != null) {
      line = line.addKeyValue(KEY_CLIENT, clientHost).addKeyValue(KEY_CLIENT_PORT, client.getPort());
    }
    line = line.addKeyValue(KEY_METHOD, method).addKeyValue(KEY_PATH, shownPath)
        .addKeyValue(KEY_PROTOCOL, request.protocol().value()).addKeyValue(KEY_STATUS, status);
    if (cache.isPresent()) {
      line = line.addKeyValue(KEY_CACHE, cache.get());
    }
    if (length.isPresent()) {
      line = line.addKeyValue(KEY_BYTES, length.getAsLong());
    }
    line = line.addKeyValue(KEY_DURATION_MS, ms);
    if (!repo.isEmpty()) {
      line = line.addKeyValue(KEY_REPO, repo);
    }
    if (who.isPresent()) {
      line = line.addKeyValue(KEY_USER, who.get());
    }
    String referer = null;
    String agent = null;
    for (HttpHeader h : request.getHeaders()) { // one pass for both (the first of each counts)
      if (referer == null && h.is("referer")) {
        referer = h.value();
      } else if (agent == null && h.is("user-agent")) {
        agent = h.value();
      }
    }
    if (referer != null) {
      line = line.addKeyValue(KEY_REFERER, referer);
    }
    if (agent != null) {
      line = line.addKeyValue(KEY_USER_AGENT, agent);
    }
    // Built here rather than by SLF4J's "{}" formatting: this runs on every request.
    StringBuilder message = new StringBuilder(96 + shownPath.length()).append(method)
        .append(" repo=").append(repo.isEmpty() ? "-" : repo)
        .append(" path=").append(shownPath)
        .append(" status=").append(status)
        .append(" cache=").append(cache.orElse("-"))
        .append(" bytes=");
    if (length.isPresent()) {
      message.append(length.getAsLong());
    } else {
      message.append('-');
    }
    message.append(" ms=").append(ms).append(" client=");
    if (client == null) {
      message.append('-');
    } else {
      message.append(clientHost).append(':').append(client.getPort());
    }
    line.log(message.append(" who=").append(who.orElse("-")).toString());
    return response;
  }
}
