package dev.corral.http.upstream;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Host names as the scope compares them. A dotted-quad IPv4 or an IPv6 literal is an address
 * (so {@code [::ffff:127.0.0.1]} and {@code 127.0.0.1} are one host); anything else, including
 * other spellings of an IPv4 address ({@code 2130706433}, {@code 127.1}, {@code 0x7f.1}), is a
 * name compared as written, lower case, so it matches no entry written another way.
 */
final class IpLiteral {
  private static final Pattern DOTTED_QUAD =
      Pattern.compile("(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}");
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+");

  private IpLiteral() {}

  /** Whether {@code host} (without brackets) is a dotted quad or an IPv6 literal. */
  static boolean is(String host) {
    return DOTTED_QUAD.matcher(host).matches() || (host.indexOf(':') >= 0 && IPV6.matcher(host).matches());
  }

  /** The address of an IP literal host (brackets allowed), without DNS; empty for a name. */
  static Optional<InetAddress> address(String host) {
    String bare = bare(host);
    if (!is(bare)) {
      return Optional.empty();
    }
    try {
      // A literal: getByName parses it and never asks DNS.
      return Optional.of(InetAddress.getByName(bare));
    } catch (UnknownHostException e) {
      return Optional.empty();
    }
  }

  /** The comparable form: an address's canonical text, or the name in lower case. */
  static String canonical(String host) {
    Optional<InetAddress> a = address(host);
    return a.map(InetAddress::getHostAddress).orElse(bare(host).toLowerCase(Locale.ROOT));
  }

  private static String bare(String host) {
    return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
  }
}
