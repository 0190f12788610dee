package dev.corral.it;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Plain HTTP/1.1 GETs against a node, each on the JDK client with bounded timeouts. */
final class Http {
  static final HttpClient CLIENT = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  private Http() {}

  static HttpRequest get(String url) {
    return HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(60)).GET().build();
  }

  static HttpResponse<byte[]> getBytes(String url) throws IOException, InterruptedException {
    return CLIENT.send(get(url), HttpResponse.BodyHandlers.ofByteArray());
  }

  static String xCache(HttpResponse<?> r) {
    return r.headers().firstValue("X-Cache").orElse("(none)");
  }
}
