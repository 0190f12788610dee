package dev.corral.http;

import dev.corral.http.auth.ClientAuth;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * The credential check in front of the artifact route (see {@link ClientAuth}). It runs before the
 * path is resolved, so a refused client learns nothing about the key: no {@code X-Cache}, no
 * upstream status, a body with no detail, and the same answer whether the repository exists.
 */
final class ClientGate {
  /** Both schemes clients use: Basic makes pip, Maven and go send their configured password. */
  static final RawHeader BASIC_CHALLENGE = RawHeader.create("WWW-Authenticate", "Basic realm=\"corral\", charset=\"UTF-8\"");
  static final RawHeader BEARER_CHALLENGE = RawHeader.create("WWW-Authenticate", "Bearer realm=\"corral\"");

  private final ClientAuth auth;

  ClientGate(ClientAuth auth) {
    this.auth = auth;
  }

  ClientAuth.Verdict check(HttpRequest request, String repo) {
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    return auth.check(repo, request.getHeader("authorization").map(HttpHeader::value));
  }

  /** The refusal for a verdict other than {@link ClientAuth.Verdict.Allowed}. */
  static HttpResponse refusal(ClientAuth.Verdict verdict) {
    if (verdict instanceof ClientAuth.Verdict.Forbidden) {
      return Answers.text(403, "forbidden");
    }
    return Answers.text(401, "unauthorized").addHeader(BASIC_CHALLENGE).addHeader(BEARER_CHALLENGE);
  }

  /**
   * The refusal under {@code /v2/}: with the Basic challenge only. Container clients take a Bearer
   * challenge as the registry token flow and would ask its realm ({@code corral}, not a URL) for a
   * token; with Basic they send the login's password, the token, on every request.
   */
  static HttpResponse registryRefusal(ClientAuth.Verdict verdict) {
    if (verdict instanceof ClientAuth.Verdict.Forbidden) {
      return Answers.text(403, "forbidden");
    }
    return Answers.text(401, "unauthorized").addHeader(BASIC_CHALLENGE);
  }

  static Optional<String> who(ClientAuth.Verdict verdict) {
    if (verdict instanceof ClientAuth.Verdict.Allowed a) {
      return a.who();
    }
    return verdict instanceof ClientAuth.Verdict.Forbidden f ? Optional.of(f.who()) : Optional.empty();
  }

  /** The repository a raw request path names: its first segment, as sent ({@code /v2/NAME}: NAME). */
  static String repoOf(String rawPath) {
    String path = RequestPath.withoutQuery(rawPath);
    if (RegistryApi.under(path)) {
      // /v2/NAME/...: the OCI repository NAME; the version check /v2/ names none ("").
      return RegistryApi.isRoot(path) ? "" : firstSegment(RegistryApi.unprefixed(path));
    }
    return firstSegment(path);
  }

  /** The first segment of a raw path, as sent. */
  static String firstSegment(String rawPath) {
    String path = RequestPath.withoutQuery(rawPath);
    int end = path.indexOf('/', 1);
    return end < 0 ? path.substring(Math.min(1, path.length())) : path.substring(1, end);
  }
}
