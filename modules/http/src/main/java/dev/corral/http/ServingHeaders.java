package dev.corral.http;

import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * Headers on every answer of the artifact route (hits, misses, coalesced waits, errors): cached
 * bytes are someone else's content, so a browser must neither guess their type ({@code nosniff}:
 * an upstream's {@code .js} or {@code .html} never runs as Corral's own page) nor give them the
 * rights of Corral's origin ({@code Content-Security-Policy: sandbox}: a served HTML page runs
 * with no scripts, forms or same-origin access).
 */
final class ServingHeaders {
  static final RawHeader NOSNIFF = RawHeader.create("X-Content-Type-Options", "nosniff");
  static final RawHeader SANDBOX = RawHeader.create("Content-Security-Policy", "sandbox");

  private ServingHeaders() {}

  static HttpResponse artifact(HttpResponse response) {
    return response.addHeader(NOSNIFF).addHeader(SANDBOX);
  }
}
