package dev.corral.http.upstream;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.http.javadsl.ClientTransport;

/**
 * The TCP transport of one repository's connection pool: it resolves the host once, lets the
 * repository's {@link UpstreamScope} check the addresses, and connects to the address it
 * checked, so no second lookup can rebind the name. TLS runs above the transport, so SNI and
 * certificate checks still use the host name.
 */
final class ScopedTransport {
  private ScopedTransport() {}

  /** A transport for {@code scope}; lookups block, so they run on {@code lookups}. */
  static ClientTransport of(UpstreamScope scope, Executor lookups) {
    return ClientTransport.withCustomResolver((host, port) -> resolve(scope, host, (Integer) port, lookups));
  }

  static CompletionStage<InetSocketAddress> resolve(UpstreamScope scope, String host, int port, Executor lookups) {
    return CompletableFuture.supplyAsync(() -> {
      InetAddress[] resolved;
      try {
        resolved = InetAddress.getAllByName(host);
      } catch (UnknownHostException e) {
        throw new CompletionException(e);
      }
      return scope.connectable(host, port, resolved, UpstreamScope.OwnAddresses.DNS);
    }, lookups);
  }
}
