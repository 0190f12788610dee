package dev.corral.cluster;

import dev.corral.core.fetch.Node;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.ServerBuilder;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * The peer copy channel's own listener: {@link PeerEndpoint} on {@code --peer-port} at the
 * cluster host, never on the client port. With the cluster's identity ({@link ClusterTls}) it is
 * HTTPS and every connection must present a certificate from the cluster's CA; without it, plain
 * HTTP (a loopback cluster host, or {@code --cluster-insecure}).
 */
public final class PeerPort {
  private PeerPort() {}

  /** Binds the peer endpoint; a port that cannot be bound is a {@link ClusterJoin.CannotListen}. */
  public static ServerBinding bind(ActorSystem<?> system, Node node, ClusterSettings c) throws Exception {
    return bind(system, node, c, PeerTransfers.NONE);
  }

  /** The same, telling each transfer the endpoint serves to {@code transfers}. */
  public static ServerBinding bind(ActorSystem<?> system, Node node, ClusterSettings c, PeerTransfers transfers)
      throws Exception {
    PeerEndpoint endpoint = new PeerEndpoint(node, transfers);
    ServerBuilder builder = Http.get(system).newServerAt(c.host(), c.peerPort());
    if (c.tls().isPresent()) {
      builder = builder.enableHttps(c.tls().get().serverContext(system, c.host(), c.peerPort()));
    }
    try {
      return builder.bindSync(request -> answer(endpoint, request)).toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (ClusterJoin.causes(e, BindException.class)) {
        throw new ClusterJoin.CannotListen(ClusterJoin.CannotListen.Port.PEER,
            "cannot listen on " + c.host() + ":" + c.peerPort() + " (" + ClusterJoin.rootMessage(e) + ")");
      }
      throw e;
    }
  }

  static HttpResponse answer(PeerEndpoint endpoint, HttpRequest request) {
    String path = request.getUri().path();
    if (!path.startsWith(PeerEndpoint.PREFIX)) {
      return HttpResponse.create().withStatus(StatusCodes.NOT_FOUND)
          .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, "no such endpoint\n"));
    }
    return endpoint.handle(request, path);
  }

  /** The base URL other nodes copy from: the scheme, the cluster host and the bound port. */
  public static String url(ClusterSettings c, InetSocketAddress bound) {
    String host = c.host();
    if (host.contains(":") && !host.startsWith("[")) {
      host = "[" + host + "]";
    }
    return (c.tls().isPresent() ? "https://" : "http://") + host + ":" + bound.getPort();
  }
}
