package dev.corral.http.upstream;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;

/**
 * The addresses an upstream request must not reach unless the operator named them: loopback,
 * link-local (cloud metadata services live there), private, shared (CGNAT), unique-local,
 * unspecified, multicast and reserved ranges, and IPv6 forms that carry such an IPv4 address
 * (IPv4-mapped, IPv4-compatible, NAT64, 6to4). Pure arithmetic on the address's bytes: no DNS, no
 * connection.
 */
public final class InternalAddresses {
  private InternalAddresses() {}

  /** Whether {@code address} lies in one of the internal ranges. */
  public static boolean contains(InetAddress address) {
    byte[] b = address.getAddress();
    if (address instanceof Inet4Address) {
      return internalV4(b);
    }
    if (address instanceof Inet6Address) {
      return internalV6(b);
    }
    return true;
  }

  private static boolean internalV4(byte[] b) {
    int a0 = b[0] & 0xff;
    int a1 = b[1] & 0xff;
    int a2 = b[2] & 0xff;
    return a0 == 0 // "this network", 0.0.0.0 included
        || a0 == 10
        || a0 == 127
        || (a0 == 100 && (a1 & 0xc0) == 64) // 100.64/10, shared address space (CGNAT)
        || (a0 == 169 && a1 == 254) // link-local, metadata services
        || (a0 == 172 && (a1 & 0xf0) == 16)
        || (a0 == 192 && a1 == 168)
        || (a0 == 192 && a1 == 0 && a2 == 0) // IETF protocol assignments
        || (a0 == 198 && (a1 & 0xfe) == 18) // benchmarking
        || a0 >= 224; // multicast, reserved, broadcast
  }

  private static boolean internalV6(byte[] b) {
    boolean firstTenZero = true;
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        firstTenZero = false;
        break;
      }
    }
    if (firstTenZero && b[10] == 0 && b[11] == 0) {
      // ::/96: unspecified, loopback and the deprecated IPv4-compatible form, all refused
      return true;
    }
    if (firstTenZero && (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff) {
      return internalV4(tail(b, 12)); // ::ffff:a.b.c.d (the JDK usually hands these over as IPv4)
    }
    int b0 = b[0] & 0xff;
    int b1 = b[1] & 0xff;
    if (b0 == 0xfe && (b1 & 0xc0) == 0x80) return true; // fe80::/10 link-local
    if (b0 == 0xfe && (b1 & 0xc0) == 0xc0) return true; // fec0::/10 site-local (deprecated)
    if ((b0 & 0xfe) == 0xfc) return true; // fc00::/7 unique-local
    if (b0 == 0xff) return true; // multicast
    if (b0 == 0x00 && b1 == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b) {
      boolean wellKnown = true; // 64:ff9b::/96, NAT64 of an IPv4 address
      for (int i = 4; i < 12; i++) wellKnown &= b[i] == 0;
      if (wellKnown) return internalV4(tail(b, 12));
    }
    if (b0 == 0x20 && b1 == 0x02) {
      return internalV4(new byte[] {b[2], b[3], b[4], b[5]}); // 2002::/16, 6to4
    }
    return false;
  }

  private static byte[] tail(byte[] b, int from) {
    return new byte[] {b[from], b[from + 1], b[from + 2], b[from + 3]};
  }

  /** An IP literal's address, for tests and settings; never a DNS lookup (throws for a name). */
  static InetAddress literal(String text) {
    if (!IpLiteral.is(text)) {
      throw new IllegalArgumentException("not an IP literal: " + text);
    }
    try {
      return InetAddress.getByName(text);
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not an IP literal: " + text, e);
    }
  }
}
