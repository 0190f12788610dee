package dev.corral.http;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ForkJoinPool;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.impl.engine.http2.Http2$;
import org.apache.pekko.http.impl.engine.http2.Http2Blueprint;
import org.apache.pekko.http.impl.engine.http2.Http2Ext;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ServerSettings;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.TLSProtocol;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.TLS;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.jdk.javaapi.FutureConverters;

/**
 * The TLS port with HTTP/2 and HTTP/1.1 chosen by ALPN per connection, where every connection
 * keeps the front door's defences (docs/security.md, "TLS"): the cap (a connection is accepted
 * only while fewer than {@code max-connections} are open), the {@link HeadDeadline} from the
 * moment the TCP connection is accepted (so a stalled TLS handshake counts too), and the
 * {@link ConnectionScope} that cancels a closed connection's waiters.
 *
 * <p>Pekko HTTP offers HTTP/2 publicly only through {@code bind(handler)}, which has no
 * per-connection hook. This class assembles the same per-connection stack Pekko's own binding
 * does (TLS with an ALPN selector; then Pekko's HTTP/1.1 server layer joined with the front
 * door's request flow, or Pekko's HTTP/2 server stack with a handler of this connection) and so
 * uses Pekko HTTP internal API ({@code Http2Blueprint}, {@code Http2Ext}, and the HTTP/2 stack's
 * {@code ServerTerminator} for a graceful stop, the same Pekko's own binding uses), written against
 * pekko-http 1.3: {@code TlsIT}, {@code TlsCancellationHttpTest} and {@code TlsDrainAnsweredBodyTest}
 * fail if an upgrade changes it. With {@code --tls-http2 off} no ALPN is answered and only the
 * HTTP/1.1 path runs: public API alone.
 */
final class AlpnServer {
  private static final Logger log = LoggerFactory.getLogger(AlpnServer.class);

  /** A connection's state: its waiters, addresses, head deadline and graceful end. */
  record Connection(ConnectionScope scope, PublicBase.Addresses addresses, HeadDeadline deadline, ConnectionEnd end) {}

  /** What the front door gives each connection (it implements this for its TLS port). */
  interface Door {
    Connection open(java.net.InetSocketAddress local, java.net.InetSocketAddress remote);

    /** HTTP/1.1: the connection's requests, answered in order. */
    Flow<HttpRequest, HttpResponse, NotUsed> requests(Connection c);

    /** HTTP/2: one request of the connection, answered concurrently with its others. */
    CompletionStage<HttpResponse> answer(HttpRequest r, Connection c);

    void headTimedOut(boolean first);

    /** The connection has ended, TCP included. */
    void closed(Connection c);
  }

  private final ActorSystem<?> system;
  private final Door door;
  private final SSLContext context;
  private final ConnectionLimits limits;
  private final Materializer mat;
  private final ServerSettings settings;
  private final LoggingAdapter pekkoLog;
  /** Pekko's HTTP/2 extension, or null when HTTP/2 is off (then no internal API is used). */
  private final Http2Ext http2;
  private final SharedKillSwitch all = KillSwitches.shared("corral-tls-connections");

  /**
   * @param http2 whether HTTP/2 is offered by ALPN ({@code --tls-http2}); without it every
   *     connection speaks HTTP/1.1 and no ALPN is answered, through Pekko's public API alone
   */
  AlpnServer(ActorSystem<?> system, Door door, SSLContext context, ConnectionLimits limits, boolean http2) {
    this.system = system;
    this.door = door;
    this.context = context;
    this.limits = limits;
    this.mat = Materializer.matFromSystem(system);
    this.settings = ServerSettings.create(Adapter.toClassic(system)).withMaxConnections(limits.maxConnections());
    this.pekkoLog = Adapter.toClassic(system).log();
    this.http2 = http2 ? Http2$.MODULE$.get(Adapter.toClassic(system)) : null;
  }

  CompletionStage<ServerBinding> bind(String host, int port) {
    return Tcp.get(Adapter.toClassic(system))
        .bind(host, port, settings.getBacklog(), List.of(), false, java.util.Optional.empty())
        .mapAsyncUnordered(limits.maxConnections(), this::serve)
        .to(Sink.ignore())
        .run(mat)
        .thenApply(tcp -> new ServerBinding(new org.apache.pekko.http.scaladsl.Http.ServerBinding(tcp.localAddress(),
            () -> FutureConverters.asScala(tcp.unbind().thenApply(v -> scala.runtime.BoxedUnit.UNIT)),
            deadline -> FutureConverters.asScala(terminate(tcp)))));
  }

  /**
   * Unbinds and cuts the connections still open. The node's drain has already ended every
   * connection the graceful way ({@link ConnectionEnd}, set for each below) and waited for them to
   * close, so this cuts only what did not close within the drain timeout.
   */
  private CompletionStage<org.apache.pekko.http.scaladsl.Http.HttpTerminated> terminate(Tcp.ServerBinding tcp) {
    return tcp.unbind().thenApply(v -> {
      all.shutdown();
      return (org.apache.pekko.http.scaladsl.Http.HttpTerminated)
          org.apache.pekko.http.scaladsl.Http.HttpServerTerminated$.MODULE$;
    });
  }

  /** Runs one connection; completes (never fails) when it has ended. */
  private CompletionStage<Done> serve(Tcp.IncomingConnection c) {
    Connection conn = door.open(c.localAddress(), c.remoteAddress());
    CompletionStage<Done> ended;
    try {
      ended = c.handleWith(connection(c, conn), mat);
    } catch (RuntimeException e) {
      log.error("could not serve a TLS connection from {}", c.remoteAddress(), e);
      ended = CompletableFuture.completedFuture(Done.getInstance());
    }
    return ended.handleAsync((d, e) -> {
      door.closed(conn);
      return Done.getInstance();
    }, Runnable::run);
  }

  /** The bytes of one connection: idle timeout, kill switches, TLS, then HTTP/2 or HTTP/1.1. */
  private Flow<ByteString, ByteString, CompletionStage<Done>> connection(Tcp.IncomingConnection c, Connection conn) {
    SSLEngine engine = context.createSSLEngine();
    engine.setUseClientMode(false);
    if (http2 != null) {
      engine.setHandshakeApplicationProtocolSelector((e, offered) ->
          offered.contains("h2") ? "h2" : offered.contains("http/1.1") ? "http/1.1" : "");
    }
    // IgnoreCancel: the session closes when the HTTP layer's output ends, after its last bytes,
    // whatever its input does. Not Pekko's IgnoreComplete: HTTP/2's graceful end completes its
    // output and cancels its input at once, and the cancel, overtaking the last frames, closed the
    // session before they were written (a stream's end lost in 1 of 4 tries,
    // TlsDrainAnsweredBodyTest). Not IgnoreBoth (close on the second of the two): an idle HTTP/1.1
    // connection ended by the stop completes its output and keeps its input, so its session never
    // closed and the stop waited for the drain timeout. A closed or stalled client still ends the
    // session from below (the TCP side, the head deadline, the idle timeout).
    BidiFlow<TLSProtocol.SslTlsOutbound, ByteString, ByteString, TLSProtocol.SslTlsInbound, NotUsed> tls =
        TLS.create(() -> engine, org.apache.pekko.stream.IgnoreCancel$.MODULE$);
    Closing closing = new Closing(engine);
    Flow<TLSProtocol.SslTlsInbound, TLSProtocol.SslTlsOutbound, NotUsed> protocols =
        Flow.of(TLSProtocol.SslTlsInbound.class)
            .prefixAndTail(1)
            .flatMapConcat(pair -> {
              // The protocol is chosen in the handshake, which is over once application bytes arrive.
              Flow<TLSProtocol.SslTlsInbound, TLSProtocol.SslTlsOutbound, ?> http =
                  http2 != null && "h2".equals(engine.getApplicationProtocol()) ? http2(conn, closing) : http1(conn, closing);
              return Source.from(pair.first()).concat(pair.second()).via(http);
            });
    Duration idle = limits.idleTimeout();
    return Flow.of(ByteString.class)
        .viaMat(KillSwitches.single(), Keep.right())
        .via(all.flow())
        .watchTermination((UniqueKillSwitch kill, CompletionStage<Done> done) -> {
          closing.bytes = kill;
          done.whenCompleteAsync((d, e) -> { // on the stream's thread, as the plain port's (FrontDoor)
            closing.ended = true;
            conn.deadline().closed();
            conn.scope().closed(ForkJoinPool.commonPool());
          }, Runnable::run);
          conn.deadline().start(first -> {
            door.headTimedOut(first);
            kill.shutdown();
          });
          conn.end().endBy(kill::shutdown); // until the handshake has chosen the protocol
          return done;
        })
        .via(BidiFlow.<ByteString, ByteString>bidirectionalIdleTimeout(idle).join(tls.reversed().join(protocols)));
  }

  private Flow<TLSProtocol.SslTlsInbound, TLSProtocol.SslTlsOutbound, NotUsed> http1(Connection conn, Closing closing) {
    Flow<HttpRequest, HttpResponse, NotUsed> requests = Flow.of(HttpRequest.class)
        .viaMat(KillSwitches.single(), Keep.right())
        .mapMaterializedValue(kill -> {
          conn.end().endBy(() -> { // as on the plain port (FrontDoor.connectionFlow)
            kill.shutdown();
            closing.onceSent();
          });
          return NotUsed.getInstance();
        })
        .via(door.requests(conn));
    return Http.get(system).serverLayer(settings, java.util.Optional.of(conn.addresses().remote()), pekkoLog)
        .reversed().join(requests);
  }

  @SuppressWarnings("unchecked")
  private Flow<TLSProtocol.SslTlsInbound, TLSProtocol.SslTlsOutbound, NotUsed> http2(Connection conn, Closing closing) {
    scala.Function1<org.apache.pekko.http.scaladsl.model.HttpRequest,
        scala.concurrent.Future<org.apache.pekko.http.scaladsl.model.HttpResponse>> handler = r ->
        FutureConverters.asScala(door.answer(r, conn)
            .thenApply(response -> (org.apache.pekko.http.scaladsl.model.HttpResponse) response));
    var stack = Http2Blueprint.serverStackTls((org.apache.pekko.http.scaladsl.settings.ServerSettings) settings, pekkoLog,
        http2.telemetry(), http2.http().dateHeaderRendering());
    var handled = Http2Blueprint.handleWithStreamIdHeader(settings.getHttp2Settings().getMaxConcurrentStreams(), handler,
        system.executionContext());
    // Pekko's HTTP/2 stack ends its connection the graceful way through its ServerTerminator:
    // GOAWAY, then its streams' end, then the close (given at most the idle timeout for it).
    scala.concurrent.duration.FiniteDuration grace =
        scala.concurrent.duration.FiniteDuration.fromNanos(limits.idleTimeout().toNanos());
    return handled.asJava().joinMat(stack, Keep.right()).mapMaterializedValue(terminator -> {
      conn.end().endBy(() -> {
        terminator.terminate(grace, system.executionContext());
        closing.onceSent();
      });
      return NotUsed.getInstance();
    });
  }

  /**
   * Closes a connection the node has ended the graceful way once everything it had to send, its
   * TLS close notice included, has gone on to TCP. Pekko's TLS stage, having sent its notice, waits
   * for the client's before it lets TCP close, and a client that reads nothing more (an idle pooled
   * connection of a blocking client) never sends one: the stop then waited for the drain timeout
   * with such a connection open. The engine is done once its notice has been written, and the
   * stage writes only as TCP asks for bytes, so by the next look (50 ms on) they have left the TLS
   * stage; the byte-level switch then ends its input and TCP closes after the writes still queued.
   */
  private static final class Closing {
    private static final long LOOK_MILLIS = 50;
    private final SSLEngine engine;
    /** The connection's byte-level switch, once its stream runs. */
    volatile UniqueKillSwitch bytes;
    volatile boolean ended;
    private final java.util.concurrent.atomic.AtomicBoolean watching = new java.util.concurrent.atomic.AtomicBoolean();

    Closing(SSLEngine engine) {
      this.engine = engine;
    }

    /** From the graceful end on: looks every 50 ms until the engine is done, then once more, then closes. */
    void onceSent() {
      if (watching.compareAndSet(false, true)) {
        look(false);
      }
    }

    private void look(boolean doneBefore) {
      if (ended) {
        return;
      }
      boolean done = engine.isOutboundDone();
      UniqueKillSwitch switchNow = bytes;
      if (done && doneBefore && switchNow != null) {
        switchNow.shutdown();
        return;
      }
      CompletableFuture.delayedExecutor(LOOK_MILLIS, java.util.concurrent.TimeUnit.MILLISECONDS).execute(() -> look(done));
    }
  }
}
