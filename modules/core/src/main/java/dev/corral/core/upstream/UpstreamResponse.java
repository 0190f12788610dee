package dev.corral.core.upstream;

import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The final answer of the upstream after redirects and retries.
 *
 * @param status the HTTP status
 * @param headers response headers (hop-by-hop and Content-Encoding/Length removed: the body is
 *     already decoded)
 * @param contentLength the exact length of {@code body} when known before it streams
 * @param body the decoded body; it fails, never ends early, on a short or broken transfer
 */
public record UpstreamResponse(
    int status, List<Header> headers, OptionalLong contentLength, Source<ByteString, NotUsed> body) {

  public UpstreamResponse {
    headers = List.copyOf(headers);
  }

  /** The first header of that name, case-insensitively. */
  public Optional<String> header(String name) {
    String n = name.toLowerCase(Locale.ROOT);
    return headers.stream()
        .filter(h -> h.name().toLowerCase(Locale.ROOT).equals(n))
        .map(Header::value)
        .findFirst();
  }
}
