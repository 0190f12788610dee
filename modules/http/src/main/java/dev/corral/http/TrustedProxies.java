package dev.corral.http;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.List;

/**
 * The proxies whose {@code X-Forwarded-Host} / {@code X-Forwarded-Proto} Corral believes: a list
 * of addresses and CIDR blocks ({@code 127.0.0.1}, {@code ::1}, {@code 127.0.0.0/8}). Empty by default: no forwarded
 * header is believed.
 */
public final class TrustedProxies {
  private record Block(byte[] network, int prefix) {}

  private final List<Block> blocks;
  private final String text;

  private TrustedProxies(List<Block> blocks, String text) {
    this.blocks = List.copyOf(blocks);
    this.text = text;
  }

  public static TrustedProxies none() {
    return new TrustedProxies(List.of(), "");
  }

  /**
   * Parses a comma-separated list of IP addresses and CIDR blocks (literal addresses only, never
   * host names, so parsing never touches DNS).
   *
   * @throws IllegalArgumentException naming the first entry that is not an address or block
   */
  public static TrustedProxies parse(String list) {
    List<Block> blocks = new ArrayList<>();
    for (String raw : list.split(",")) {
      String entry = raw.trim();
      if (entry.isEmpty()) {
        continue;
      }
      int slash = entry.indexOf('/');
      String address = slash >= 0 ? entry.substring(0, slash) : entry;
      byte[] bytes = literal(address, entry);
      int prefix = bytes.length * 8;
      if (slash >= 0) {
        try {
          prefix = Integer.parseInt(entry.substring(slash + 1));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("not an address or CIDR block: " + entry);
        }
        if (prefix < 0 || prefix > bytes.length * 8) {
          throw new IllegalArgumentException("prefix length out of range: " + entry);
        }
      }
      blocks.add(new Block(bytes, prefix));
    }
    return new TrustedProxies(blocks, list.trim());
  }

  private static byte[] literal(String address, String entry) {
    boolean v4 = address.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
    boolean v6 = address.contains(":") && address.matches("[0-9a-fA-F:.]+");
    if (!v4 && !v6) {
      throw new IllegalArgumentException("not an address or CIDR block: " + entry);
    }
    try {
      return InetAddress.getByName(address).getAddress(); // a literal: no lookup happens
    } catch (UnknownHostException e) {
      throw new IllegalArgumentException("not an address or CIDR block: " + entry);
    }
  }

  public boolean isEmpty() {
    return blocks.isEmpty();
  }

  /** Whether a connection from {@code address} comes from a trusted proxy. */
  public boolean contains(InetAddress address) {
    byte[] a = address.getAddress();
    for (Block b : blocks) {
      if (b.network().length == a.length && matches(b.network(), a, b.prefix())) {
        return true;
      }
    }
    return false;
  }

  private static boolean matches(byte[] network, byte[] address, int prefix) {
    int full = prefix / 8;
    for (int i = 0; i < full; i++) {
      if (network[i] != address[i]) {
        return false;
      }
    }
    int rest = prefix % 8;
    if (rest == 0) {
      return true;
    }
    int mask = (0xff << (8 - rest)) & 0xff;
    return (network[full] & mask) == (address[full] & mask);
  }

  @Override
  public String toString() {
    return text;
  }
}
