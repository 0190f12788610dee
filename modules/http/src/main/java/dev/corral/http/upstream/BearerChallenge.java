package dev.corral.http.upstream;

import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A registry's {@code WWW-Authenticate: Bearer realm="...",service="...",scope="..."} challenge
 * (Docker Registry v2 token authentication, used by OCI registries): where to ask for a token and
 * for what. Nothing here is secret.
 *
 * @param realm the token endpoint: an absolute http(s) URL with a host and no user information
 * @param service the {@code service} parameter, or empty when the challenge names none
 * @param scopes the {@code scope} parameter split at spaces (a challenge may name several), in
 *     the challenge's order; empty for a challenge without one (the API root {@code /v2/})
 */
public record BearerChallenge(URI realm, Optional<String> service, List<String> scopes) {
  public BearerChallenge {
    scopes = List.copyOf(scopes);
  }

  /**
   * The first usable Bearer challenge among these {@code WWW-Authenticate} values (each may hold
   * several challenges); empty when there is none, or when its realm is not an absolute http(s)
   * URL with a host and without user information.
   */
  public static Optional<BearerChallenge> in(List<String> headerValues) {
    for (String value : headerValues) {
      for (Parsed challenge : parse(value)) {
        if (!challenge.scheme.equalsIgnoreCase("bearer")) continue;
        Optional<URI> realm = realm(challenge.params.get("realm"));
        if (realm.isEmpty()) continue;
        String scope = challenge.params.getOrDefault("scope", "").trim();
        List<String> scopes = scope.isEmpty() ? List.of() : List.of(scope.split(" +"));
        return Optional.of(new BearerChallenge(realm.get(),
            Optional.ofNullable(challenge.params.get("service")).filter(s -> !s.isEmpty()), scopes));
      }
    }
    return Optional.empty();
  }

  /** The token request's URL: the realm with {@code service} and one {@code scope} per scope added to its query. */
  public URI tokenUrl() {
    StringBuilder query = new StringBuilder(realm.getRawQuery() == null ? "" : realm.getRawQuery());
    service.ifPresent(s -> append(query, "service", s));
    scopes.forEach(s -> append(query, "scope", s));
    String url = realm.toASCIIString();
    int cut = url.indexOf('?');
    int fragment = url.indexOf('#');
    String base = url.substring(0, cut >= 0 ? cut : fragment >= 0 ? fragment : url.length());
    return URI.create(query.length() == 0 ? base : base + "?" + query);
  }

  /** Whether asking the realm would leave https for http, when the challenge came over https ({@code challenged}). */
  public boolean leavesHttps(URI challenged) {
    return "https".equalsIgnoreCase(challenged.getScheme()) && !"https".equalsIgnoreCase(realm.getScheme());
  }

  private static void append(StringBuilder query, String name, String value) {
    if (query.length() > 0) query.append('&');
    query.append(name).append('=').append(URLEncoder.encode(value, StandardCharsets.UTF_8));
  }

  private static Optional<URI> realm(String value) {
    if (value == null) return Optional.empty();
    try {
      URI uri = new URI(value.trim());
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      boolean usable = (scheme.equals("http") || scheme.equals("https")) && uri.getHost() != null
          && uri.getRawUserInfo() == null;
      return usable ? Optional.of(uri) : Optional.empty();
    } catch (URISyntaxException e) {
      return Optional.empty();
    }
  }

  /** One challenge as written: its scheme and its parameters (names in lower case). */
  private record Parsed(String scheme, Map<String, String> params) {}

  /**
   * The challenges of one header value (RFC 9110 section 11.6.1): {@code scheme} followed by
   * {@code name=value} parameters (a token or a quoted string), challenges and parameters
   * separated by commas. A token68 after a scheme is skipped.
   */
  private static List<Parsed> parse(String value) {
    List<Parsed> out = new ArrayList<>();
    Parsed current = null;
    int i = 0;
    int n = value.length();
    while (i < n) {
      char c = value.charAt(i);
      if (c == ' ' || c == '\t' || c == ',') {
        i++;
        continue;
      }
      int start = i;
      while (i < n && isTokenChar(value.charAt(i))) i++;
      if (i == start) {
        i++; // a stray character: skipped
        continue;
      }
      String token = value.substring(start, i);
      int afterSpace = i;
      while (afterSpace < n && (value.charAt(afterSpace) == ' ' || value.charAt(afterSpace) == '\t')) afterSpace++;
      boolean param = afterSpace < n && value.charAt(afterSpace) == '=' && current != null
          && !(afterSpace + 1 < n && value.charAt(afterSpace + 1) == '=');
      if (!param) {
        current = new Parsed(token, new HashMap<>());
        out.add(current);
        continue;
      }
      i = afterSpace + 1;
      while (i < n && (value.charAt(i) == ' ' || value.charAt(i) == '\t')) i++;
      StringBuilder v = new StringBuilder();
      if (i < n && value.charAt(i) == '"') {
        i++;
        while (i < n && value.charAt(i) != '"') {
          if (value.charAt(i) == '\\' && i + 1 < n) i++;
          v.append(value.charAt(i++));
        }
        i++; // the closing quote
      } else {
        while (i < n && isTokenChar(value.charAt(i))) v.append(value.charAt(i++));
      }
      current.params.putIfAbsent(token.toLowerCase(Locale.ROOT), v.toString());
    }
    return out;
  }

  private static boolean isTokenChar(char c) {
    return c > ' ' && c < 127 && "\"(),/:;<=>?@[\\]{}".indexOf(c) < 0 || c == '/' || c == ':';
  }

  @Override
  public String toString() {
    return "Bearer challenge[realm=" + QuerylessUrl.of(realm) + ", service=" + service.orElse("none")
        + ", scopes=" + scopes + "]";
  }
}
