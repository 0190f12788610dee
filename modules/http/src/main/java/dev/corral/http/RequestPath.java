package dev.corral.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.http.javadsl.model.HttpRequest;

/**
 * A repository request path, validated and split: {@code /{repo}/{path...}}.
 *
 * <p>Input is the request target's path exactly as the client sent it (still percent-encoded,
 * query already removed), as found in Pekko's {@code Raw-Request-URI} header. Each segment is
 * percent-decoded exactly once and checked; the upstream path is then re-encoded from the decoded
 * segments, so whatever reaches the upstream is what Corral checked. Callers must never decode a
 * segment a second time: {@code %252e%252e} is the literal name {@code %2e%2e}, harmless only
 * because nobody decodes it again.
 *
 * <p>Rejected: dot segments ({@code .}, {@code ..}, raw or encoded in any case, also with a
 * {@code ;param} suffix, which servlet containers strip); backslashes (raw or {@code %5c});
 * encoded slashes unless allowed, and even then never when they produce empty or dot pieces;
 * control characters (C0, DEL, C1) after decoding; malformed percent-encoding; invalid UTF-8
 * (including overlong forms such as {@code %c0%ae}); raw characters that cannot appear in a path
 * (space, {@code ?}, {@code #}, non-ASCII); empty segments; paths over {@value #MAX_RAW_LENGTH}
 * bytes; and a path with no segment after the repository.
 *
 * <p>Accepted but worth knowing: look-alike characters such as the fullwidth full stop U+FF0E are
 * ordinary characters, not dots; they are sent upstream percent-encoded ({@code %EF%BC%8E}) and
 * are safe as long as no later layer applies Unicode compatibility normalisation to paths. A
 * single trailing slash is kept (PyPI's simple index is {@code /simple/<name>/}); see
 * {@link Ok#directory()}.
 */
public sealed interface RequestPath permits RequestPath.Ok, RequestPath.Rejected {

  /** Longest raw path accepted, in bytes (checked before anything else is looked at). */
  int MAX_RAW_LENGTH = 4096;

  /**
   * A valid path.
   *
   * @param repo the repository name, matching {@code [a-z0-9][a-z0-9._-]*}
   * @param segments the decoded segments after the repository, never empty, no segment empty; a
   *     segment holds a {@code /} only where an encoded slash was allowed
   * @param upstreamPath the path to append to the upstream base URL: starts with {@code /}, each
   *     decoded segment re-encoded as an RFC 3986 pchar sequence (upper-case hex, an allowed
   *     encoded slash as {@code %2F}), joined with {@code /}, ending with {@code /} when the
   *     client's path did
   */
  record Ok(String repo, List<String> segments, String upstreamPath) implements RequestPath {
    public Ok {
      segments = List.copyOf(segments);
    }

    /** True when the client's path ended with {@code /} (a directory-style URL). */
    public boolean directory() {
      return upstreamPath.endsWith("/");
    }
  }

  /** An invalid path; {@code reason} is one line, fit for a 400 body. */
  record Rejected(String reason) implements RequestPath {}

  /**
   * Validates and splits a raw request path.
   *
   * @param rawPath the path as the client sent it, percent-encoded, without query or fragment
   * @param allowEncodedSlash whether {@code %2f} may appear inside a segment (npm scoped names,
   *     {@code @scope%2fname})
   */
  static RequestPath parse(String rawPath, boolean allowEncodedSlash) {
    if (rawPath == null || rawPath.isEmpty()) {
      return new Rejected("empty path");
    }
    // Length first, before any work proportional to the input. Only ASCII passes the checks
    // below, so characters and bytes agree for every path that is accepted.
    if (rawPath.length() > MAX_RAW_LENGTH) {
      return new Rejected("path longer than " + MAX_RAW_LENGTH + " bytes");
    }
    if (rawPath.charAt(0) != '/') {
      return new Rejected("path must start with '/'");
    }
    for (int i = 0; i < rawPath.length(); i++) {
      char c = rawPath.charAt(i);
      if (c < 0x20 || c == 0x7f) {
        return new Rejected("control character in path");
      }
      if (c > 0x7e) {
        return new Rejected("non-ASCII character in path must be percent-encoded");
      }
      switch (c) {
        case ' ':
          return new Rejected("space in path must be percent-encoded");
        case '\\':
          return new Rejected("backslash in path");
        case '?':
        case '#':
          return new Rejected("query or fragment must be removed before path validation");
        default:
          break;
      }
    }

    String[] raw = rawPath.substring(1).split("/", -1);
    String repo = raw[0];
    if (repo.isEmpty()) {
      return new Rejected("missing repository name");
    }
    if (!PathGrammar.isRepoName(repo)) {
      return new Rejected("repository name must match [a-z0-9][a-z0-9._-]*");
    }
    int last = raw.length - 1;
    boolean directory = last >= 1 && raw[last].isEmpty();
    int end = directory ? last : raw.length; // exclusive end of the path segments
    if (end <= 1) {
      return new Rejected("missing path after repository '" + repo + "'");
    }

    List<String> segments = new ArrayList<>(end - 1);
    StringBuilder upstream = new StringBuilder(rawPath.length() + 16);
    for (int i = 1; i < end; i++) {
      String rawSegment = raw[i];
      if (rawSegment.isEmpty()) {
        return new Rejected("empty path segment ('//')");
      }
      String decoded;
      try {
        decoded = PathGrammar.decode(rawSegment);
      } catch (IllegalArgumentException e) {
        return new Rejected(e.getMessage());
      }
      String problem = PathGrammar.checkDecoded(decoded, allowEncodedSlash);
      if (problem != null) {
        return new Rejected(problem);
      }
      segments.add(decoded);
      upstream.append('/');
      PathGrammar.encodeSegment(decoded, upstream);
    }
    if (directory) {
      upstream.append('/');
    }
    return new Ok(repo, segments, upstream.toString());
  }

  /** The request target exactly as the client sent it (Raw-Request-URI), query included. */
  static String raw(HttpRequest request) {
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    return request.getHeader("raw-request-uri").map(h -> h.value())
        .orElseGet(() -> request.getUri().getPathString()
            + request.getUri().rawQueryString().map(q -> "?" + q).orElse(""));
  }

  static String withoutQuery(String raw) {
    int i = raw.indexOf('?');
    return i >= 0 ? raw.substring(0, i) : raw;
  }

  /** The query of a request target, without its {@code ?}. */
  static Optional<String> query(String raw) {
    int i = raw.indexOf('?');
    return i >= 0 ? Optional.of(raw.substring(i + 1)) : Optional.empty();
  }
}
