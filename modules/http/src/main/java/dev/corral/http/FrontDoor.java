package dev.corral.http;

import static dev.corral.http.Answers.done;
import static dev.corral.http.Answers.text;

import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Timers;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.wait.ByteBudget;
import dev.corral.core.wait.Waiters;
import dev.corral.http.auth.ClientAuth;
import dev.corral.http.metrics.Metrics;
import dev.corral.http.metrics.ResponseTimes;
import dev.corral.registry.Repository;
import dev.corral.registry.group.GroupRepository;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.IncomingConnection;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.AttributeKey;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.http.javadsl.model.headers.Connection;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Corral's HTTP front door: binds, gives each connection its {@link ConnectionScope} (so a waiter
 * whose client hangs up returns at once, SEMANTICS C1), drains on stop, and routes: the
 * {@code /-/} endpoints to {@link AdminRoutes}, everything else to {@link ArtifactRoute}, which
 * serves keys through {@link KeyServe} (a hit from this node's store without asking the entity, a
 * miss waiting on the key's entity).
 */
public final class FrontDoor {
  private static final Logger log = LoggerFactory.getLogger(FrontDoor.class);

  private final ActorSystem<?> system;
  private final Metrics metrics;
  private final Waiters waiters;
  /**
   * The connections' head deadlines, in real time as Pekko's own idle timeout: a cancelled timer
   * leaves the queue at once (see {@link Timers}).
   */
  private final Scheduler connectionTimers = Timers.system();
  private final RequestCounts counts;
  private final ResponseTimes responseTimes;
  private final KeyServe keys;
  private final ArtifactRoute artifacts;
  private final AdminRoutes admin;
  private final ClientGate gate;
  private final AtomicBoolean ready = new AtomicBoolean(false);
  private final AtomicBoolean draining = new AtomicBoolean(false);
  /** Connections answering a request (their {@link HeadDeadline}s count them): a graceful stop waits for 0. */
  private final AtomicInteger answeringConnections = new AtomicInteger();
  /** Each open connection's graceful end ({@link #closeConnections}). */
  private final Set<ConnectionEnd> openConnections = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closingConnections = new AtomicBoolean();

  /**
   * The target of this node's request to itself ({@link #warmUp}): the health check with a query
   * of 128 random bits, new at every start. A request for exactly this target is not logged and not
   * timed; no client can hide its requests behind it without knowing the bits.
   */
  private final String warmUpTarget = "/-/health/live?warm-up="
      + HexFormat.of().formatHex(randomBits());

  private static byte[] randomBits() {
    byte[] bits = new byte[16];
    new SecureRandom().nextBytes(bits);
    return bits;
  }

  /**
   * A strict body up to this size is handed to Pekko whole: a socket's send buffer takes at least
   * that much at once (Linux's default, {@code net.ipv4.tcp_wmem}'s middle value, is 16 KiB). A
   * larger one goes as a stream, so that its end is known ({@link #sent}).
   */
  static final int SENT_WHOLE = 16 * 1024;

  private static final AttributeKey<PublicBase.Addresses> ADDRESSES = AttributeKey.create("corral-addresses", PublicBase.Addresses.class);

  public FrontDoor(ActorSystem<?> system, Node node, Metrics metrics, Waiters waiters, Map<String, Repository> repos,
      Optional<String> adminToken, PublicBase publicBase) {
    this(system, node, metrics, waiters, repos, adminToken, publicBase, ServeLimits.defaults(), ClientAuth.open());
  }

  /**
   * @param limits the node's metadata memory and per-client miss rate ({@link ServeLimits})
   * @param clientAuth who reads which repository ({@link ClientAuth#open()}: everyone)
   */
  public FrontDoor(ActorSystem<?> system, Node node, Metrics metrics, Waiters waiters, Map<String, Repository> repos,
      Optional<String> adminToken, PublicBase publicBase, ServeLimits limits, ClientAuth clientAuth) {
    this.gate = new ClientGate(clientAuth);
    this.system = system;
    this.metrics = metrics;
    this.waiters = waiters;
    this.counts = new RequestCounts(metrics);
    this.responseTimes = metrics.responseTimes(repos.keySet());
    metrics.showAtZero(repos.keySet());
    for (Repository r : repos.values()) {
      if (r instanceof GroupRepository g) {
        g.members().forEach(m -> metrics.groupMemberFailures.labelValues(g.name(), m.name()));
      }
    }
    Bypass bypass = new Bypass(system, node.upstream(), node.downloads(), counts);
    MissRates missRates = limits.missRate().map(r -> new MissRates(r, node.ticker())).orElse(null);
    ByteBudget budget = new ByteBudget(limits.metadataMemoryBytes(), limits.metadataWait(), node.scheduler(), node.io());
    RewrittenMetadata metadata = new RewrittenMetadata(budget, node.store(), node.hot(), node.io());
    this.keys = new KeyServe(node, waiters, counts, bypass, missRates, r -> r.getAttribute(ADDRESSES)
        .flatMap(a -> publicBase.client(a.remote(), r.getHeader("x-forwarded-for").map(h -> h.value()))), metadata);
    this.artifacts = new ArtifactRoute(system, node, repos, keys, counts, publicBase, waiters, bypass, budget, metadata);
    this.admin = new AdminRoutes(system, node, metrics, repos, adminToken, artifacts, ready::get,
        clientAuth.required());
  }

  /**
   * Binds and serves within {@code limits}; each connection gets its own flow, so its closing
   * cancels its waiters.
   *
   * <p>The cap is applied here: Pekko applies {@code max-connections} only inside
   * {@code bindFlow}/{@code bind}, never to a {@code connectionSource()}, which delivers every
   * connection it is pulled for. {@code mapAsyncUnordered(max)} pulls (and so accepts) the next
   * connection only while fewer than {@code max} are open, as Pekko's own bindings do: the rest
   * wait in the kernel's accept backlog and take no descriptor of this process.
   */
  public CompletionStage<ServerBinding> bind(String host, int port, ConnectionLimits limits) {
    Materializer mat = Materializer.matFromSystem(system);
    OpenFileLimit.warnIfBelow(limits.maxConnections());
    return Http.get(system).newServerAt(host, port)
        .connectionSource()
        .mapAsyncUnordered(limits.maxConnections(), (IncomingConnection c) -> serve(c, limits, mat))
        .to(Sink.ignore())
        .run(mat);
  }

  /**
   * Binds HTTPS with HTTP/2 negotiated by ALPN and HTTP/1.1 beside it ({@code http2}), or HTTP/1.1
   * alone, each connection with the same cap, head deadline, connection scope and graceful end as
   * plain HTTP ({@link AlpnServer}; docs/security.md, "TLS"). Not Pekko's {@code enableHttps}: its
   * TLS stage closes eagerly, on the first of the HTTP layer's two ends, and a stopping node's
   * connection then lost the end of a response on its way (TlsDrainAnsweredBodyTest).
   */
  public CompletionStage<ServerBinding> bindTls(String host, int port, ConnectionLimits limits, SSLContext tls,
      boolean http2) {
    OpenFileLimit.warnIfBelow(limits.maxConnections());
    AlpnServer.Door door = new AlpnServer.Door() {
      @Override
      public AlpnServer.Connection open(InetSocketAddress local, InetSocketAddress remote) {
        metrics.httpConnections.inc();
        AlpnServer.Connection c = new AlpnServer.Connection(new ConnectionScope(waiters.cancels()),
            new PublicBase.Addresses(local, remote), new HeadDeadline(connectionTimers, Ticker.systemTicker(),
                limits.headerReadTimeout(), limits.idleTimeout(), answeringConnections), new ConnectionEnd(() -> { }));
        opened(c.end());
        return c;
      }

      @Override
      public Flow<HttpRequest, HttpResponse, org.apache.pekko.NotUsed> requests(AlpnServer.Connection c) {
        return FrontDoor.this.requests(c.scope(), c.addresses(), c.deadline());
      }

      @Override
      public CompletionStage<HttpResponse> answer(HttpRequest r, AlpnServer.Connection c) {
        return FrontDoor.this.answer(r, c.scope(), c.addresses(), c.deadline());
      }

      @Override
      public void headTimedOut(boolean first) {
        metrics.httpHeadTimeouts.labelValues(first ? "first-request" : "next-request").inc();
      }

      @Override
      public void closed(AlpnServer.Connection c) {
        openConnections.remove(c.end());
        metrics.httpConnections.dec();
      }
    };
    return new AlpnServer(system, door, tls, limits, http2).bind(host, port);
  }

  /**
   * Asks this front door for its health check once, over a new connection from Pekko HTTP's client
   * (plain HTTP only): a node's first requests otherwise pay for the first use of the server's and
   * the client's connection code (classes initialised, lambdas and call sites linked): a fresh
   * node's first miss waited 20-30 ms longer for its upstream request, a burst of 50 about 100 ms
   * (docs/benchmarks.md, "A fresh node's first requests"). Sent without waiting, so the start does
   * not wait for it either. The request is neither logged nor timed: it is not a client's.
   *
   * @param bound the address the front door listens on (a wildcard one is asked on loopback)
   * @return the status of the answer; failed (never thrown) when it could not be asked
   */
  public CompletionStage<Integer> warmUp(InetSocketAddress bound) {
    try {
      // Connection: close, or the client's pool would keep a connection to this node open (and
      // counted in corral_http_connections) for a minute.
      return Http.get(system).singleRequest(HttpRequest.GET("http://" + authority(bound) + warmUpTarget)
              .addHeader(Connection.create("close")))
          .thenApply(response -> {
            response.discardEntityBytes(system);
            return response.status().intValue();
          });
    } catch (RuntimeException e) { // e.g. a link-local IPv6 address whose scope no URI takes as it is
      return CompletableFuture.failedFuture(e);
    }
  }

  /** host:port to reach {@code bound} from this process: a wildcard address is reached on loopback. */
  static String authority(InetSocketAddress bound) {
    InetAddress host = bound.getAddress();
    boolean v6 = host instanceof Inet6Address;
    String literal = host.isAnyLocalAddress() ? (v6 ? "::1" : "127.0.0.1") : host.getHostAddress();
    return (v6 ? "[" + literal + "]" : literal) + ":" + bound.getPort();
  }

  /** Runs one connection; completes (never fails) when it has ended. */
  private CompletionStage<Done> serve(IncomingConnection c, ConnectionLimits limits, Materializer mat) {
    metrics.httpConnections.inc();
    CompletionStage<Done> ended;
    try {
      ended = c.handleWith(connectionFlow(c.localAddress(), c.remoteAddress(), limits), mat);
    } catch (RuntimeException e) {
      log.error("could not serve a connection from {}", c.remoteAddress(), e);
      ended = CompletableFuture.completedFuture(Done.getInstance());
    }
    return ended.handleAsync((d, e) -> {
      metrics.httpConnections.dec();
      return Done.getInstance();
    }, Runnable::run);
  }

  /**
   * The flow of one connection (materialised once); its value completes when the connection's
   * requests end. Its {@link HeadDeadline} closes it (through a kill switch, quietly) when a
   * request head is not complete in time.
   */
  Flow<HttpRequest, HttpResponse, CompletionStage<Done>> connectionFlow(InetSocketAddress local,
      InetSocketAddress remote, ConnectionLimits limits) {
    ConnectionScope scope = new ConnectionScope(waiters.cancels());
    PublicBase.Addresses addresses = new PublicBase.Addresses(local, remote);
    HeadDeadline deadline = new HeadDeadline(connectionTimers, Ticker.systemTicker(), limits.headerReadTimeout(),
        limits.idleTimeout(), answeringConnections);
    return Flow.of(HttpRequest.class)
        .viaMat(KillSwitches.single(), Keep.right())
        .watchTermination((UniqueKillSwitch kill, CompletionStage<Done> done) -> {
          ConnectionEnd end = new ConnectionEnd(kill::shutdown);
          opened(end);
          // On the thread that ends the stream: a stage Pekko's Java API hands out runs a plain
          // whenComplete on the common pool, one more thread woken for every connection.
          done.whenCompleteAsync((d, e) -> {
            openConnections.remove(end);
            deadline.closed();
            scope.closed(ForkJoinPool.commonPool());
          }, Runnable::run);
          deadline.start(first -> {
            metrics.httpHeadTimeouts.labelValues(first ? "first-request" : "next-request").inc();
            kill.shutdown();
          });
          return done;
        })
        .via(requests(scope, addresses, deadline));
  }

  /** One HTTP/1.1 connection's requests, answered in order, each telling the connection's deadline. */
  private Flow<HttpRequest, HttpResponse, org.apache.pekko.NotUsed> requests(ConnectionScope scope,
      PublicBase.Addresses addresses, HeadDeadline deadline) {
    return Flow.of(HttpRequest.class)
        .mapAsync(1, r -> answer(r, scope, addresses, deadline));
  }

  /** Answers one request of a connection (HTTP/1.1 in order, HTTP/2 concurrently). */
  private CompletionStage<HttpResponse> answer(HttpRequest r, ConnectionScope scope, PublicBase.Addresses addresses,
      HeadDeadline deadline) {
    deadline.requestArrived();
    metrics.httpRequestsInFlight.inc();
    HttpRequest scoped = r.addAttribute(ConnectionScope.KEY, scope).addAttribute(ADDRESSES, addresses);
    return handle(scoped).whenComplete((response, e) -> {
      if (e != null) {
        metrics.httpRequestsInFlight.dec();
        deadline.responseSent(); // Pekko answers 500 for it
      }
    }).thenApply(response -> sent(response, r.method() == HttpMethods.HEAD, deadline));
  }

  /** Ready once the node can serve; false again while it drains. */
  public void ready(boolean value) {
    ready.set(value);
  }

  /**
   * The node is stopping (SEMANTICS L4): not ready, and artifact requests that still arrive on
   * open connections are refused with 503 and {@code Connection: close}. Requests already taken
   * run to the end; health and metrics still answer.
   */
  public void drain() {
    ready.set(false);
    draining.set(true);
  }

  /**
   * How many connections are answering a request: from a request's arrival until its response
   * has been handed to Pekko, a streamed body until it ends (or until the connection ends). A
   * graceful stop waits for this to reach 0 before it ends the connections. Counting only bodies
   * being streamed, as before, missed a request still waiting for a fetch on another node and a
   * response answered whose body Pekko had not begun (waiting behind another on its connection).
   */
  public int answeringConnections() {
    return answeringConnections.get();
  }

  /**
   * Ends every open connection the graceful way, for a stop that has waited for its responses
   * ({@link #answeringConnections}): no further request is read (HTTP/2: GOAWAY), a response still
   * on its way is sent whole, then the connection is closed once its bytes are written
   * ({@link ConnectionEnd}). Pekko's {@code ServerBinding.terminate} instead fails a connection with
   * no request pending at once, which resets it, and so did the TLS port's byte-level switch: the
   * last bytes of a streamed body whose source had ended, still on their way to a slow client, were
   * lost (DrainAnsweredBodyTest, TlsDrainAnsweredBodyTest; ClusterDrainTest's cut 4 MiB body).
   */
  public void closeConnections() {
    closingConnections.set(true);
    openConnections.forEach(ConnectionEnd::end);
  }

  /** Counts a connection as open until it has ended; ends it at once if the node is closing them. */
  private void opened(ConnectionEnd end) {
    openConnections.add(end);
    if (closingConnections.get()) {
      end.end(); // accepted as the node began to close its connections
    }
  }

  /** Connections not ended yet (see {@link #closeConnections}). */
  public int openConnections() {
    return openConnections.size();
  }

  /**
   * Tells the connection's deadline (and the requests in flight) when the response is out: at once
   * for a small strict body or an answer to HEAD (whose body Pekko may never materialise), else
   * when the body has ended, however it ends.
   *
   * <p>A larger strict body is handed to Pekko as a stream of that one piece which ends only when
   * asked for more, that is once the piece has been written to the socket: given whole, Pekko took
   * it at once, and a stopping node that waited for its responses found nothing to wait for while
   * megabytes still waited in it for a slow client's window, then cut them
   * (DrainAnsweredBodyTest). Up to {@link #SENT_WHOLE} the socket's own buffer takes the body.
   * (A 1 KiB hit stays whole: this costs a streamed entity, which 1 MiB hits measured as 5-25 %
   * fewer a second.)
   */
  private HttpResponse sent(HttpResponse response, boolean head, HeadDeadline deadline) {
    ResponseEntity entity = response.entity();
    if (!head && entity instanceof HttpEntity.Strict strict && strict.getData().size() > SENT_WHOLE) {
      ByteString bytes = strict.getData();
      Source<ByteString, NotUsed> once = Source.unfold(Boolean.TRUE,
          first -> first ? Optional.of(Pair.create(Boolean.FALSE, bytes)) : Optional.empty());
      entity = HttpEntities.create(entity.getContentType(), bytes.size(), once); // counted below as a stream
    }
    if (head || entity.isStrict() || !(entity.isDefault() || entity.isChunked())) {
      metrics.httpRequestsInFlight.dec();
      deadline.responseSent();
      return response;
    }
    var body = entity.getDataBytes().watchTermination((mat, done) -> {
      done.whenCompleteAsync((d, e) -> { // on the body's thread, as a connection's end
        metrics.httpRequestsInFlight.dec();
        deadline.responseSent();
      }, Runnable::run);
      return mat;
    });
    return response.withEntity(entity.isDefault()
        ? HttpEntities.create(entity.getContentType(), entity.getContentLengthOption().getAsLong(), body)
        : HttpEntities.createChunked(entity.getContentType(), body));
  }

  /** Answers one request, writes its {@link AccessLog} line and times it ({@link ResponseTimes}). */
  public CompletionStage<HttpResponse> handle(HttpRequest request) {
    long started = System.nanoTime();
    String raw = RequestPath.raw(request);
    String path = RequestPath.withoutQuery(raw);
    PublicBase.Addresses addresses = request.getAttribute(ADDRESSES).orElse(null);
    InetSocketAddress client = addresses == null ? null : addresses.remote();
    if (raw.startsWith("/-/")) {
      if (raw.equals(warmUpTarget)) {
        return route(request, raw, addresses); // the node's own (warmUp): not a client's request
      }
      return route(request, raw, addresses)
          .thenApply(r -> timed("", r, started))
          .thenApply(r -> AccessLog.log(request, path, "", r, started, client, Optional.empty()));
    }
    String repo = artifacts.repoOf(raw);
    ClientAuth.Verdict checked = gate.check(request, repo);
    // The OCI version check reads no repository: any valid credential passes it.
    ClientAuth.Verdict verdict = checked instanceof ClientAuth.Verdict.Forbidden f && RegistryApi.isRoot(path)
        ? new ClientAuth.Verdict.Allowed(Optional.of(f.who())) : checked;
    CompletionStage<HttpResponse> answer = verdict instanceof ClientAuth.Verdict.Allowed
        ? route(request, raw, addresses)
        : done(counts.count("", "rejected", RegistryApi.under(path)
            ? RegistryApi.asRegistryError(ClientGate.registryRefusal(verdict), path).addHeader(RegistryApi.API_VERSION)
            : ClientGate.refusal(verdict)));
    return answer.thenApply(ServingHeaders::artifact)
        .thenApply(r -> timed(repo, r, started))
        .thenApply(r -> AccessLog.log(request, path, repo, r, started, client, ClientGate.who(verdict)));
  }

  private HttpResponse timed(String repo, HttpResponse response, long startedNanos) {
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    responseTimes.observe(repo, response.getHeader("x-cache").map(HttpHeader::value).orElse(null),
        System.nanoTime() - startedNanos);
    return response;
  }

  private CompletionStage<HttpResponse> route(HttpRequest request, String raw, PublicBase.Addresses addresses) {
    try {
      if (raw.startsWith("/-/")) {
        return admin.handle(request, raw, addresses);
      }
      if (draining.get()) {
        return done(counts.count("", "error", text(503, "this node is stopping")
            .addHeader(RawHeader.create("Connection", "close"))));
      }
      return artifacts.handle(request, raw, addresses).exceptionally(e -> {
        log.error("request {} failed", raw, e);
        return counts.count("", "error", text(500, "internal error"));
      });
    } catch (RuntimeException e) {
      log.error("request failed", e);
      return done(counts.count("", "error", text(500, "internal error")));
    }
  }

  /** Answers a GET or HEAD for a key, as a request for it would be (see {@link KeyServe}). */
  public CompletionStage<HttpResponse> serve(HttpRequest request, ArtifactKey key, boolean mutable) {
    return keys.serve(request, key, mutable).thenApply(KeyServe.Served::response);
  }
}
