package dev.corral.http.upstream;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.time.Duration;
import java.util.regex.Pattern;

/**
 * A token from a registry's token realm and the moment (on the node's ticker) it stops being
 * used. The token is a secret: {@link #toString()} never shows it, and a parse failure's message
 * never quotes the answer.
 *
 * @param expiresAtNanos ticker time after which the token is fetched anew
 */
public record RegistryToken(String value, long expiresAtNanos) {
  /** The lifetime of a token whose answer names none (the token specification's default). */
  static final Duration DEFAULT_LIFETIME = Duration.ofSeconds(60);
  /** At most this much of a token's lifetime is given up, so that it is not sent as it expires. */
  static final Duration MAX_MARGIN = Duration.ofSeconds(10);

  private static final ObjectMapper JSON = new ObjectMapper();
  /** Visible ASCII: what may go into an {@code Authorization} header unchanged. */
  private static final Pattern HEADER_SAFE = Pattern.compile("[\\x21-\\x7e]{1,16384}");

  /** The value of the {@code Authorization} header. */
  public String authorization() {
    return "Bearer " + value;
  }

  /**
   * The token of a realm's JSON answer: {@code token}, else {@code access_token} (OAuth 2 form),
   * living {@code expires_in} seconds (default 60) counted from {@code sentAtNanos}, the moment the
   * token request was sent (the realm issued it after that), less a margin of a tenth of it, at
   * most 10 s. {@code issued_at} is not used: it is the realm's wall clock, and a node clock
   * skewed against it would make every token look expired, or live too long (a token the upstream
   * refuses early is refreshed once on its 401 anyway).
   *
   * @throws IllegalArgumentException when the answer holds no usable token; the message does not
   *     quote the answer
   */
  public static RegistryToken parse(byte[] json, long sentAtNanos) {
    JsonNode answer;
    try {
      answer = JSON.readTree(json);
    } catch (IOException e) {
      // Not chained: the parser's message quotes the answer, which may hold a token.
      throw new IllegalArgumentException("the token realm's answer is not JSON");
    }
    if (answer == null || !answer.isObject()) {
      throw new IllegalArgumentException("the token realm's answer is not a JSON object");
    }
    JsonNode token = answer.hasNonNull("token") ? answer.get("token") : answer.get("access_token");
    if (token == null || !token.isTextual()) {
      throw new IllegalArgumentException("the token realm's answer has no token or access_token");
    }
    if (!HEADER_SAFE.matcher(token.asText()).matches()) {
      throw new IllegalArgumentException("the token realm's token is not printable ASCII of at most 16 KiB");
    }
    JsonNode expiresIn = answer.get("expires_in");
    Duration lifetime = expiresIn != null && expiresIn.canConvertToLong() && expiresIn.asLong() > 0
        ? Duration.ofSeconds(Math.min(expiresIn.asLong(), Duration.ofDays(365).toSeconds()))
        : DEFAULT_LIFETIME;
    Duration margin = min(lifetime.dividedBy(10), MAX_MARGIN);
    return new RegistryToken(token.asText(), sentAtNanos + lifetime.minus(margin).toNanos());
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  @Override
  public String toString() {
    return "RegistryToken[***]";
  }
}
