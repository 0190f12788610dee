package dev.corral.http;

import java.time.Instant;

/**
 * Whether a GET or HEAD for a stored representation is answered {@code 304 Not Modified} (RFC
 * 9110 13.1.2 If-None-Match, 13.1.3 If-Modified-Since, evaluation order as in 13.2.2).
 *
 * <p>Only called when Corral holds a representation to serve, so {@code If-None-Match: *} always
 * matches.
 */
public final class Conditional {
  private Conditional() {}

  /**
   * @param method the request method; only {@code GET} and {@code HEAD} can be answered 304
   * @param etag the stored ETag as the upstream sent it ({@code "abc"} or {@code W/"abc"}), or null
   * @param lastModified the stored Last-Modified HTTP-date, or null
   * @param ifNoneMatch the request's If-None-Match value, or null when absent
   * @param ifModifiedSince the request's If-Modified-Since value, or null when absent
   * @return true when the answer is 304
   */
  public static boolean notModified(
      String method, String etag, String lastModified, String ifNoneMatch, String ifModifiedSince) {
    if (!"GET".equals(method) && !"HEAD".equals(method)) {
      return false;
    }
    if (ifNoneMatch != null) {
      // Present If-None-Match decides alone; If-Modified-Since is then ignored (13.1.3).
      if (ifNoneMatch.trim().equals("*")) {
        return true;
      }
      EntityTag stored = EntityTag.parse(etag);
      if (stored == null) {
        return false;
      }
      for (EntityTag tag : EntityTag.parseList(ifNoneMatch)) {
        if (tag.weaklyMatches(stored)) {
          return true;
        }
      }
      return false;
    }
    if (ifModifiedSince != null) {
      Instant since = HttpDate.parse(ifModifiedSince);
      Instant modified = HttpDate.parse(lastModified);
      // An unparseable date or no Last-Modified: the header is ignored.
      return since != null && modified != null && !modified.isAfter(since);
    }
    return false;
  }
}
