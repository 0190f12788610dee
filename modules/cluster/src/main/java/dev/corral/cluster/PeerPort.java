package dev.corral.cluster;

import dev.corral.core.fetch.Node;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import javax.net.ssl.SSLEngine;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.IgnoreCancel$;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.TLSProtocol;
import org.apache.pekko.stream.UniformFanOutShape;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Broadcast;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.GraphDSL;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.TLS;
import org.apache.pekko.stream.javadsl.TLSPlacebo;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;

/**
 * The peer copy channel's own listener: {@link PeerEndpoint} on {@code --peer-port} at the
 * cluster host, never on the client port. With the cluster's identity ({@link ClusterTls}) it is
 * HTTPS and every connection must present a certificate from the cluster's CA; without it, plain
 * HTTP (a loopback cluster host, or {@code --cluster-insecure}).
 *
 * <p>A stopping node ends the port's connections the graceful way ({@link #closeConnections}),
 * as its front door ends the client ports' (SEMANTICS L4): a copy on its way to another node is
 * sent whole. So each connection runs Pekko HTTP's public server layer over TCP (and TLS) here,
 * not in Pekko's {@code bind}, whose {@code terminate} reset a connection with no request pending
 * while the last bytes of a copy were still on their way (PeerDrainAnsweredBodyTest: a reader of
 * four cut in every run, plain and TLS alike).
 */
public final class PeerPort {
  private final ActorSystem<?> system;
  private final PeerEndpoint endpoint;
  private final ServerSettings settings;
  private final Optional<Supplier<SSLEngine>> tls;
  private final LoggingAdapter pekkoLog;
  /** The connections not ended yet. */
  private final Set<Connection> open = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closing = new AtomicBoolean();
  /** Cuts whatever is still open when the port is terminated. */
  private final SharedKillSwitch all = KillSwitches.shared("corral-peer-connections");
  private final Tcp.ServerBinding tcp;

  private PeerPort(ActorSystem<?> system, PeerEndpoint endpoint, ClusterSettings c) throws Exception {
    this.system = system;
    this.endpoint = endpoint;
    this.settings = ServerSettings.create(Adapter.toClassic(system));
    this.tls = c.tls().map(t -> t.serverEngines(system, c.host(), c.peerPort()));
    this.pekkoLog = Adapter.toClassic(system).log();
    try {
      // At most max-connections at once, as Pekko's bindings do: the next connection is accepted
      // only while fewer are open; the rest wait in the kernel's backlog.
      this.tcp = Tcp.get(Adapter.toClassic(system))
          .bind(c.host(), c.peerPort(), settings.getBacklog(), List.of(), false, Optional.empty())
          .mapAsyncUnordered(settings.getMaxConnections(), this::serve)
          .to(Sink.ignore())
          .run(Materializer.matFromSystem(system))
          .toCompletableFuture().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      if (ClusterJoin.causes(e, BindException.class)) {
        throw new ClusterJoin.CannotListen(ClusterJoin.CannotListen.Port.PEER,
            "cannot listen on " + c.host() + ":" + c.peerPort() + " (" + ClusterJoin.rootMessage(e) + ")");
      }
      throw e;
    }
  }

  /**
   * Binds the peer endpoint, telling each transfer it serves to {@code transfers}; a port that
   * cannot be bound is a {@link ClusterJoin.CannotListen}.
   */
  public static PeerPort bind(ActorSystem<?> system, Node node, ClusterSettings c, PeerTransfers transfers)
      throws Exception {
    return new PeerPort(system, new PeerEndpoint(node, transfers), c);
  }

  /** Where the port listens. */
  public InetSocketAddress localAddress() {
    return tcp.localAddress();
  }

  /**
   * Ends every open connection the graceful way: no further request is read, the response on its
   * way is sent whole, then the connection closes; one accepted from now on is ended at once. A
   * stopping node calls it once no copy is being sent ({@link PeerTransfers#sendingEnded}: a copy's
   * body has left the store, not yet the node), then waits for {@link #openConnections} to reach 0.
   */
  public void closeConnections() {
    closing.set(true);
    open.forEach(Connection::end);
  }

  /** Connections not ended yet. */
  public int openConnections() {
    return open.size();
  }

  /** Stops listening and cuts the connections still open (those that did not end in time). */
  public CompletionStage<Done> terminate() {
    return tcp.unbind().handle((v, e) -> {
      all.shutdown();
      return Done.getInstance();
    });
  }

  /** Runs one connection; completes (never fails) when it has ended. */
  private CompletionStage<Done> serve(Tcp.IncomingConnection c) {
    Connection connection = new Connection();
    open.add(connection);
    if (closing.get()) {
      connection.end(); // accepted as the node began to close its connections
    }
    try {
      return c.handleWith(bytes(c.remoteAddress(), connection), Materializer.matFromSystem(system))
          .handle((d, e) -> Done.getInstance());
    } catch (RuntimeException e) {
      open.remove(connection);
      pekkoLog.error(e, "could not serve a peer connection from {}", c.remoteAddress());
      return CompletableFuture.completedFuture(Done.getInstance());
    }
  }

  /**
   * One connection's bytes: the idle timeout, TLS or none, Pekko HTTP's server layer, the endpoint.
   * Open until TCP has closed the connection, its last bytes written to the kernel: the actor
   * system's end, which follows the port's at once, kills a connection still writing, and the
   * reset loses what its reader had not yet read (a reader of four, once, in a CI run, when a
   * connection counted as closed once its last bytes had only been handed to TCP). TCP ends its
   * side when the HTTP layer's output has ended, so nothing here cancels its input before then:
   * what arrives after the HTTP layer has stopped reading is drained.
   */
  private Flow<ByteString, ByteString, CompletionStage<Done>> bytes(InetSocketAddress remote, Connection connection) {
    Flow<HttpRequest, HttpResponse, NotUsed> requests = Flow.of(HttpRequest.class)
        .viaMat(KillSwitches.single(), Keep.right())
        .mapMaterializedValue(kill -> {
          connection.endBy(kill);
          return NotUsed.getInstance();
        })
        .map(r -> answer(endpoint, r));
    Flow<TLSProtocol.SslTlsInbound, TLSProtocol.SslTlsOutbound, NotUsed> http =
        Http.get(system).serverLayer(settings, Optional.of(remote), pekkoLog).reversed().join(requests);
    SSLEngine engine = tls.map(Supplier::get).orElse(null);
    connection.engine = engine;
    Flow<ByteString, ByteString, NotUsed> session = transport(engine).reversed().join(http);
    scala.concurrent.duration.Duration idle = settings.getTimeouts().idleTimeout();
    if (idle.isFinite()) {
      session = BidiFlow.<ByteString, ByteString>bidirectionalIdleTimeout(java.time.Duration.ofNanos(idle.toNanos()))
          .join(session);
    }
    return Flow.of(ByteString.class)
        .watchTermination((m, done) -> {
          done.whenComplete((d, e) -> {
            connection.ended = true;
            open.remove(connection);
          });
          return done;
        })
        .via(all.flow())
        .via(drained())
        // Below TLS, above the drain: ending the session's input from here leaves TCP's own input
        // read to its end, so the connection still counts until TCP has closed it.
        .via(Flow.of(ByteString.class).viaMat(KillSwitches.single(), Keep.right()).mapMaterializedValue(kill -> {
          connection.below = kill;
          return NotUsed.getInstance();
        }))
        .via(session);
  }

  /** Passes bytes on; when its reader cancels, reads on to the end (dropping them) rather than cancel. */
  private static Flow<ByteString, ByteString, NotUsed> drained() {
    return Flow.fromGraph(GraphDSL.create(b -> {
      UniformFanOutShape<ByteString, ByteString> both = b.add(Broadcast.create(2, false));
      b.from(both.out(1)).to(b.add(Sink.<ByteString>ignore()));
      return FlowShape.of(both.in(), both.out(0));
    }));
  }

  /**
   * One connection's graceful end: its requests' kill switch (no further request read, the
   * response on its way sent whole, then the close), which exists only once the connection's
   * stream runs; an end asked before then happens when it does.
   *
   * <p>Over TLS the close waits for the other side's close notice, and a connection that never
   * sends one (a member that reads nothing more) held the stop until the drain timeout, as did a
   * stranger that never even sent its hello (PeerDrainAnsweredBodyTest). So from the graceful end
   * on, the engine is looked at every 50 ms; once its outbound is done (its notice written: the
   * TLS stage writes only as TCP asks), or its handshake never ended, and still so at the next
   * look, the session's input is ended from below and TCP closes after what it still holds. The
   * client TLS port does the same ({@code AlpnServer.Closing}, in the http module, which this one
   * cannot see).
   */
  private static final class Connection {
    private static final long LOOK_MILLIS = 50;
    private volatile UniqueKillSwitch kill;
    private volatile boolean ending;
    /** This connection's TLS engine; none on a plain port. */
    volatile SSLEngine engine;
    /** Ends the session's input from below (TLS only: a plain connection closes with its output). */
    volatile UniqueKillSwitch below;
    volatile boolean ended;

    void endBy(UniqueKillSwitch kill) {
      this.kill = kill;
      if (ending) {
        kill.shutdown();
        look(false);
      }
    }

    void end() {
      ending = true;
      UniqueKillSwitch k = kill;
      if (k != null) {
        k.shutdown();
        look(false);
      }
    }

    private void look(boolean doneBefore) {
      SSLEngine e = engine;
      if (e == null || ended) {
        return;
      }
      // Before its handshake has ended a connection has no request, so nothing to send: the TLS
      // stage would wait for the hello of a stranger that never sends one.
      boolean done = e.isOutboundDone() || "NONE".equals(e.getSession().getProtocol());
      UniqueKillSwitch switchNow = below;
      if (done && doneBefore && switchNow != null) {
        switchNow.shutdown();
        return;
      }
      CompletableFuture.delayedExecutor(LOOK_MILLIS, TimeUnit.MILLISECONDS).execute(() -> look(done));
    }
  }

  /**
   * TLS with a client certificate required, closing when the HTTP layer's output ends, after its
   * last bytes, whatever its input does (Pekko's {@code IgnoreCancel}, as the client TLS port): an
   * idle connection ended by the stop completes its output and keeps its input, and with the
   * close on the second of the two ({@code IgnoreBoth}) its session never closed, so the stop
   * waited for the drain timeout. The peer's client answers the close notice and closes; or
   * plain bytes.
   */
  @SuppressWarnings("unchecked")
  private static BidiFlow<TLSProtocol.SslTlsOutbound, ByteString, ByteString, TLSProtocol.SslTlsInbound, NotUsed>
      transport(SSLEngine engine) {
    if (engine != null) {
      return TLS.create(() -> engine, IgnoreCancel$.MODULE$);
    }
    // The placebo's inbound elements are SessionBytes, an SslTlsInbound: the cast only widens.
    return (BidiFlow<TLSProtocol.SslTlsOutbound, ByteString, ByteString, TLSProtocol.SslTlsInbound, NotUsed>)
        (BidiFlow<?, ?, ?, ?, ?>) TLSPlacebo.getInstance();
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
