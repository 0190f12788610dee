package dev.corral.http;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The URL clients reach this node at, for rewriting links in served metadata (npm tarball URLs,
 * PyPI file URLs). In order: the configured public base URL; else, for a connection from a
 * trusted proxy, its {@code X-Forwarded-Proto} and {@code X-Forwarded-Host} (or {@code Host});
 * else the local address the connection arrived at. A client's own {@code Host} or forwarded
 * headers are never believed, so a hostile header cannot point anyone at another host. The
 * trusted proxy must set (overwrite, not append to) {@code X-Forwarded-Host}: a proxy that passes
 * a client's header through would let that client choose the links in its own response.
 */
public final class PublicBase {
  /** The addresses of a request's connection. */
  record Addresses(InetSocketAddress local, InetSocketAddress remote) {}

  /** A host name or address with an optional port: nothing that could end or extend a URL. */
  private static final Pattern HOST = Pattern.compile("(\\[[0-9a-fA-F:.]+\\]|[A-Za-z0-9.-]+)(:[0-9]{1,5})?");

  private final Optional<String> configured;
  private final TrustedProxies trusted;
  /** The scheme of the local address's URL: https when this node serves TLS itself. */
  private final String localScheme;

  /**
   * @param configured the public base URL, for example {@code https://cache.example/corral}
   */
  public PublicBase(Optional<URI> configured, TrustedProxies trusted) {
    this(configured.map(u -> strip(u.toString())), trusted, "http");
  }

  private PublicBase(Optional<String> configured, TrustedProxies trusted, String localScheme) {
    this.configured = configured;
    this.trusted = trusted;
    this.localScheme = localScheme;
  }

  /** The same, for a node that serves TLS itself: the local address's URL is https. */
  public PublicBase overTls() {
    return new PublicBase(configured, trusted, "https");
  }

  public static PublicBase local() {
    return new PublicBase(Optional.empty(), TrustedProxies.none());
  }

  /**
   * The base URL (scheme, host, port and any path prefix; no trailing slash) for a request.
   *
   * @param local the address the connection arrived at
   * @param remote the address the connection came from
   * @param forwardedProto the request's {@code X-Forwarded-Proto}, if any
   * @param forwardedHost the request's {@code X-Forwarded-Host}, or its {@code Host}, if any
   */
  public String of(InetSocketAddress local, InetSocketAddress remote, Optional<String> forwardedProto,
      Optional<String> forwardedHost) {
    if (configured.isPresent()) {
      return configured.get();
    }
    if (remote != null && remote.getAddress() != null && trusted.contains(remote.getAddress())) {
      Optional<String> host = forwardedHost.map(h -> first(h)).filter(h -> HOST.matcher(h).matches());
      if (host.isPresent()) {
        String proto = forwardedProto.map(p -> first(p).toLowerCase(Locale.ROOT))
            .filter(p -> p.equals("http") || p.equals("https")).orElse("http");
        return proto + "://" + host.get();
      }
    }
    return localScheme + "://" + hostPort(local);
  }

  /**
   * The client's address for per-client limits: the connection's peer, or, when the peer is a
   * trusted proxy, the last address of its {@code X-Forwarded-For} (the one that proxy saw:
   * earlier entries are the client's own word).
   */
  public Optional<String> client(InetSocketAddress remote, Optional<String> forwardedFor) {
    if (remote == null || remote.getAddress() == null) {
      return Optional.empty();
    }
    if (trusted.contains(remote.getAddress()) && forwardedFor.isPresent()) {
      String v = forwardedFor.get();
      String last = v.substring(v.lastIndexOf(',') + 1).trim();
      if (!last.isEmpty() && last.length() <= 64) {
        return Optional.of(last);
      }
    }
    return Optional.of(remote.getAddress().getHostAddress());
  }

  private static String hostPort(InetSocketAddress a) {
    if (a == null) {
      return "localhost";
    }
    String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    if (host.contains(":")) {
      int zone = host.indexOf('%');
      host = "[" + (zone >= 0 ? host.substring(0, zone) : host) + "]";
    }
    return host + ":" + a.getPort();
  }

  /** The first of a comma-separated list (a chain of proxies appends; the first is the client's). */
  private static String first(String value) {
    int comma = value.indexOf(',');
    return (comma >= 0 ? value.substring(0, comma) : value).trim();
  }

  private static String strip(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }
}
