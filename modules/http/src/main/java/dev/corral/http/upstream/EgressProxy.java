package dev.corral.http.upstream;

import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import org.apache.pekko.http.javadsl.ClientTransport;
import org.apache.pekko.http.javadsl.settings.ConnectionPoolSettings;

/**
 * The HTTP proxy upstream connections go through ({@code --upstream-proxy}), as corporate
 * networks need, except to the hosts of {@code --upstream-no-proxy}. Every connection through it
 * is a {@code CONNECT} tunnel (Pekko HTTP's {@link ClientTransport#httpsProxy}), for https and
 * plain http upstreams alike, so TLS stays end to end and the proxy sees only host and port.
 * Only the upstream client uses it: copies between the cluster's nodes go node to node.
 *
 * @param address the proxy's host and port (resolved when a connection is made)
 * @param noProxy host names, each matching itself and its subdomains ({@code .corp.example}
 *     and {@code corp.example} alike), or IP literals; {@code *} matches every host
 */
public record EgressProxy(InetSocketAddress address, List<String> noProxy) {
  public EgressProxy {
    Objects.requireNonNull(address, "address");
    noProxy = noProxy.stream().map(h -> h.trim().toLowerCase(Locale.ROOT)).filter(h -> !h.isEmpty())
        .map(h -> h.startsWith(".") ? h.substring(1) : h).toList();
  }

  /**
   * Parses {@code http://HOST:PORT} (the port is required; no path, no user info: proxy
   * credentials never go in a URL that is logged and shown in the process list).
   *
   * @throws IllegalArgumentException with a one-line reason
   */
  public static EgressProxy parse(String url, List<String> noProxy) {
    URI uri;
    try {
      uri = new URI(url.trim());
    } catch (java.net.URISyntaxException e) {
      throw new IllegalArgumentException("not a URL; expected http://HOST:PORT");
    }
    if (!"http".equalsIgnoreCase(uri.getScheme())) {
      throw new IllegalArgumentException("expected http://HOST:PORT (the proxy is spoken to in plain HTTP,"
          + " upstream TLS runs inside its CONNECT tunnel)");
    }
    if (uri.getRawUserInfo() != null) {
      throw new IllegalArgumentException("credentials in the proxy URL are not accepted");
    }
    if (uri.getHost() == null || uri.getPort() < 1) {
      throw new IllegalArgumentException("expected http://HOST:PORT, with the port");
    }
    if (uri.getRawPath() != null && !uri.getRawPath().isEmpty() && !uri.getRawPath().equals("/")
        || uri.getRawQuery() != null || uri.getRawFragment() != null) {
      throw new IllegalArgumentException("expected http://HOST:PORT, without a path or query");
    }
    String host = uri.getHost().startsWith("[") ? uri.getHost().substring(1, uri.getHost().length() - 1) : uri.getHost();
    return new EgressProxy(InetSocketAddress.createUnresolved(host, uri.getPort()), noProxy);
  }

  /** Whether connections to {@code host} go through the proxy. */
  public boolean appliesTo(String host) {
    String h = host.toLowerCase(Locale.ROOT);
    if (h.startsWith("[") && h.endsWith("]")) {
      h = h.substring(1, h.length() - 1);
    }
    for (String n : noProxy) {
      if (n.equals("*") || h.equals(n) || h.endsWith("." + n)) {
        return false;
      }
    }
    return true;
  }

  /** The pool settings with this proxy as their transport. */
  ConnectionPoolSettings applyTo(ConnectionPoolSettings pool) {
    return pool.withConnectionSettings(pool.getConnectionSettings().withTransport(ClientTransport.httpsProxy(address)));
  }

  /** The proxy for a host, if it applies. */
  static Optional<EgressProxy> forHost(Optional<EgressProxy> proxy, String host) {
    return proxy.filter(p -> p.appliesTo(host));
  }

  @Override
  public String toString() {
    return "http://" + address.getHostString() + ":" + address.getPort() + (noProxy.isEmpty() ? "" : " (not for " + noProxy + ")");
  }
}
