package dev.corral.http.upstream;

import java.net.URI;

/**
 * An upstream URL as it may be logged or shown: without its query (pre-signed URLs carry their
 * signature there) and without user information.
 */
public final class QuerylessUrl {
  private QuerylessUrl() {}

  public static String of(URI url) {
    StringBuilder out = new StringBuilder();
    if (url.getScheme() != null) out.append(url.getScheme()).append("://");
    if (url.getRawAuthority() != null) {
      String authority = url.getRawAuthority();
      int at = authority.lastIndexOf('@');
      out.append(at >= 0 ? authority.substring(at + 1) : authority);
    }
    out.append(url.getRawPath() == null ? "" : url.getRawPath());
    if (url.getRawQuery() != null) out.append("?...");
    return out.toString();
  }

  /** {@link #of(URI)} for a string; one that does not parse is cut at its first '?'. */
  public static String of(String url) {
    try {
      return of(new URI(url));
    } catch (java.net.URISyntaxException e) {
      int q = url.indexOf('?');
      return q < 0 ? url : url.substring(0, q) + "?...";
    }
  }
}
