package dev.corral.http;

import java.time.Instant;

/**
 * The answer to a request's {@code Range} header against a representation of known length (RFC
 * 9110 14.2): the whole body (200), one part (206) or nothing (416).
 *
 * <p>Only single {@code bytes} ranges are served as 206. A multi-range request, another unit, or
 * a syntactically invalid header gets the whole body with 200, which RFC 9110 allows. A range that
 * covers the whole body ({@code bytes=0-}) is still a 206.
 */
public sealed interface ByteRange permits ByteRange.Full, ByteRange.Partial, ByteRange.Unsatisfiable {

  /** Serve the whole representation: 200. */
  record Full() implements ByteRange {}

  /** Serve {@code length} bytes from {@code offset}: 206 with {@link #contentRange(long)}. */
  record Partial(long offset, long length) implements ByteRange {
    public Partial {
      if (offset < 0 || length <= 0) {
        throw new IllegalArgumentException("offset " + offset + ", length " + length);
      }
    }

    /** The last byte position, inclusive. */
    public long last() {
      return offset + length - 1;
    }

    /** The Content-Range value: {@code bytes first-last/total}. */
    public String contentRange(long total) {
      return "bytes " + offset + "-" + last() + "/" + total;
    }
  }

  /** Nothing in the range exists: 416 with {@link #contentRange(long)}. */
  record Unsatisfiable() implements ByteRange {
    /** The Content-Range value: <code>bytes &#42;/<i>total</i></code>. */
    public String contentRange(long total) {
      return "bytes */" + total;
    }
  }

  /**
   * The range to serve for a request, honouring If-Range (RFC 9110 13.1.5): when present, the
   * range applies only if it strongly matches the stored ETag or, being an HTTP-date, equals the
   * stored Last-Modified exactly; otherwise the whole body is served.
   *
   * @param method only {@code GET} has ranges; every other method gets {@link Full}
   * @param range the Range header value, or null
   * @param ifRange the If-Range header value, or null
   * @param etag the stored ETag as the upstream sent it, or null
   * @param lastModified the stored Last-Modified HTTP-date, or null
   * @param total the representation's length in bytes
   */
  static ByteRange select(
      String method, String range, String ifRange, String etag, String lastModified, long total) {
    if (!"GET".equals(method) || range == null) {
      return new Full();
    }
    if (ifRange != null && !ifRangeHolds(ifRange, etag, lastModified)) {
      return new Full();
    }
    return parse(range, total);
  }

  /**
   * The range a Range header asks for, without preconditions.
   *
   * @param range the Range header value, or null
   * @param total the representation's length in bytes
   */
  static ByteRange parse(String range, long total) {
    if (range == null || total < 0) {
      return new Full();
    }
    int eq = range.indexOf('=');
    if (eq < 0 || !range.substring(0, eq).trim().equalsIgnoreCase("bytes")) {
      return new Full();
    }
    String spec = null;
    for (String member : range.substring(eq + 1).split(",", -1)) {
      String m = member.trim();
      if (m.isEmpty()) {
        continue; // empty list elements are allowed (RFC 9110 5.6.1)
      }
      if (spec != null) {
        return new Full(); // multi-range: the whole body instead of multipart/byteranges
      }
      spec = m;
    }
    if (spec == null) {
      return new Full();
    }
    int dash = spec.indexOf('-');
    if (dash < 0) {
      return new Full();
    }
    String first = spec.substring(0, dash);
    String last = spec.substring(dash + 1);
    if (first.isEmpty()) {
      long suffix = digits(last);
      if (suffix < 0) {
        return new Full();
      }
      if (suffix == 0 || total == 0) {
        return new Unsatisfiable();
      }
      long length = Math.min(suffix, total);
      return new Partial(total - length, length);
    }
    long from = digits(first);
    long to = last.isEmpty() ? Long.MAX_VALUE : digits(last);
    if (from < 0 || to < 0 || to < from) {
      return new Full(); // invalid range-spec: ignore the header
    }
    if (from >= total) {
      return new Unsatisfiable(); // also every range of an empty representation
    }
    long end = Math.min(to, total - 1);
    return new Partial(from, end - from + 1);
  }

  /** A non-empty run of ASCII digits; Long.MAX_VALUE if it overflows; -1 if not digits. */
  private static long digits(String s) {
    if (s.isEmpty()) {
      return -1;
    }
    long value = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      if (value > (Long.MAX_VALUE - (c - '0')) / 10) {
        value = Long.MAX_VALUE; // keep scanning: a later non-digit still makes it invalid
      } else {
        value = value * 10 + (c - '0');
      }
    }
    return value;
  }

  private static boolean ifRangeHolds(String ifRange, String etag, String lastModified) {
    String v = ifRange.trim();
    if (v.startsWith("\"") || v.startsWith("W/")) {
      EntityTag asked = EntityTag.parse(v);
      return asked != null && asked.stronglyMatches(EntityTag.parse(etag));
    }
    Instant asked = HttpDate.parse(v);
    Instant modified = HttpDate.parse(lastModified);
    return asked != null && asked.equals(modified);
  }
}
