package dev.corral.http.upstream;

import java.net.InetAddress;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Pattern;

/**
 * One entry of a repository's {@code allowed-hosts}: a host name or IP literal, optionally with a
 * port ({@code files.upstream.example}, {@code 127.0.0.1:8443}, {@code [2001:db8::1]:8443}).
 *
 * <p>An entry without a port matches the scheme's default port only (80 for http, 443 for
 * https), as a browser's origin does; any other port is written out. Names match exactly (no
 * wildcards, no subdomains); an IP literal matches that address in any IPv6 spelling of it.
 *
 * @param host the canonical host ({@link IpLiteral#canonical})
 * @param port the port, or empty for the scheme's default
 * @param text the entry as written, for messages
 */
public record AllowedHost(String host, OptionalInt port, String text) {
  private static final Pattern NAME =
      Pattern.compile("[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*");

  /**
   * Parses one entry; the message of the exception is one line that quotes the entry (an entry
   * is never secret).
   */
  public static AllowedHost parse(String entry) {
    String text = entry.trim();
    if (text.isEmpty()) {
      throw new IllegalArgumentException("an empty entry");
    }
    if (text.contains("://") || text.indexOf('/') >= 0 || text.indexOf('@') >= 0 || text.indexOf('?') >= 0) {
      throw new IllegalArgumentException("\"" + text + "\" is not HOST or HOST:PORT (no scheme, path or user)");
    }
    String host;
    String port = null;
    if (text.startsWith("[")) {
      int close = text.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("\"" + text + "\" has no closing ]");
      }
      host = text.substring(1, close);
      String rest = text.substring(close + 1);
      if (!rest.isEmpty()) {
        if (!rest.startsWith(":")) {
          throw new IllegalArgumentException("\"" + text + "\" is not [IPV6] or [IPV6]:PORT");
        }
        port = rest.substring(1);
      }
      if (host.indexOf(':') < 0 || IpLiteral.address(host).isEmpty()) {
        throw new IllegalArgumentException("\"" + text + "\" does not hold an IPv6 address in its brackets");
      }
    } else {
      int colon = text.indexOf(':');
      if (colon >= 0 && text.indexOf(':', colon + 1) >= 0) {
        throw new IllegalArgumentException("\"" + text + "\": write an IPv6 address in brackets, [ADDRESS]:PORT");
      }
      host = colon < 0 ? text : text.substring(0, colon);
      port = colon < 0 ? null : text.substring(colon + 1);
      if (!NAME.matcher(host).matches() || host.length() > 253) {
        throw new IllegalArgumentException("\"" + text + "\" is not a host name or IP address");
      }
    }
    OptionalInt p = OptionalInt.empty();
    if (port != null) {
      int n;
      try {
        n = port.matches("[0-9]{1,5}") ? Integer.parseInt(port) : -1;
      } catch (NumberFormatException e) {
        n = -1;
      }
      if (n < 1 || n > 65535) {
        throw new IllegalArgumentException("\"" + text + "\" has no port between 1 and 65535 after its ':'");
      }
      p = OptionalInt.of(n);
    }
    return new AllowedHost(IpLiteral.canonical(host), p, text);
  }

  /** Whether a request to {@code host} (canonical) on {@code port} with {@code scheme} is allowed. */
  boolean matches(String scheme, String canonicalHost, int port) {
    if (!host.equals(canonicalHost)) {
      return false;
    }
    int wanted = this.port.orElse(scheme.equals("https") ? 443 : 80);
    return wanted == port;
  }

  /** The entry's address when it is an IP literal: the operator allowed that address by name. */
  Optional<InetAddress> address() {
    return IpLiteral.address(host);
  }

  @Override
  public String toString() {
    return text;
  }
}
