package dev.corral.http;

import dev.corral.http.metrics.Metrics;
import dev.corral.core.download.Failure;
import dev.corral.core.fetch.Via;
import dev.corral.core.fetch.Reply;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.FetchPolicy;
import dev.corral.core.fetch.Node;
import dev.corral.core.wait.Waiters;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.cluster.PeerEndpoint;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.IncomingConnection;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.AttributeKey;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Corral's HTTP front door: {@code GET}/{@code HEAD /{repo}/{path}} for artifacts and the
 * {@code /-/} endpoints (health, metrics, purge). A hit is served from this node's store without
 * asking the entity; a miss waits on the key's {@link FetchEntity} through {@link Waiters}.
 * Each connection has a {@link ConnectionScope}, so a waiter whose client hangs up returns at
 * once (SEMANTICS C1).
 */
public final class FrontDoor {
  private static final Logger log = LoggerFactory.getLogger(FrontDoor.class);
  /** On a stale copy served because its revalidation failed upstream (stale-if-error). */
  static final RawHeader REVALIDATION_FAILED = RawHeader.create("Warning", "111 - \"Revalidation Failed\"");

  private final ActorSystem<?> system;
  private final Node node;
  private final Metrics metrics;
  private final Waiters waiters;
  private final Map<String, Repository> repos;
  private final Optional<String> adminToken;
  private final ArtifactResponses responses;
  private final PublicBase publicBase;
  private final PeerEndpoint peer;
  private final AtomicBoolean ready = new AtomicBoolean(false);
  private final AtomicBoolean draining = new AtomicBoolean(false);
  /** Response bodies being sent right now (streamed ones; strict bodies go out at once). */
  private final AtomicInteger streamingResponses = new AtomicInteger();

  /** The addresses of a request's connection, for {@link PublicBase}. */
  private record Addresses(InetSocketAddress local, InetSocketAddress remote) {}

  private static final AttributeKey<Addresses> ADDRESSES = AttributeKey.create("corral-addresses", Addresses.class);

  /** Most a metadata body may be when it is read whole (rewritten, or looked up by a repository). */
  static final int WHOLE_BODY_LIMIT = 128 * 1024 * 1024;

  public FrontDoor(ActorSystem<?> system, Node node, Metrics metrics, Waiters waiters, Map<String, Repository> repos,
      Optional<String> adminToken, PublicBase publicBase) {
    this.metrics = metrics;
    this.publicBase = publicBase;
    this.system = system;
    this.node = node;
    this.waiters = waiters;
    this.repos = Map.copyOf(repos);
    this.adminToken = adminToken;
    this.responses = new ArtifactResponses(node.store(), node.hot(), node.io());
    this.peer = new PeerEndpoint(node);
  }

  /** Binds and serves; each connection gets its own flow so its closing cancels its waiters. */
  public CompletionStage<ServerBinding> bind(String host, int port) {
    Materializer mat = Materializer.matFromSystem(system);
    return Http.get(system)
        .newServerAt(host, port)
        .connectionSource()
        .to(Sink.foreach((IncomingConnection c) -> c.handleWith(connectionFlow(c.localAddress(), c.remoteAddress()), mat)))
        .run(mat);
  }

  Flow<HttpRequest, HttpResponse, ?> connectionFlow() {
    return connectionFlow(null, null);
  }

  Flow<HttpRequest, HttpResponse, ?> connectionFlow(InetSocketAddress local, InetSocketAddress remote) {
    ConnectionScope scope = new ConnectionScope(waiters.cancels());
    Addresses addresses = new Addresses(local, remote);
    return Flow.of(HttpRequest.class)
        .watchTermination((mat, done) -> {
          done.whenComplete((d, e) -> scope.closed());
          return mat;
        })
        .map(r -> r.addAttribute(ConnectionScope.KEY, scope).addAttribute(ADDRESSES, addresses))
        .mapAsync(1, this::handle)
        .map(this::counted);
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
   * How many response bodies are still streaming to clients. A graceful stop waits for this to
   * reach 0: Pekko's {@code ServerBinding.terminate} only waits for responses not yet begun and
   * cuts connections whose streamed body is still on its way.
   */
  public int streamingResponses() {
    return streamingResponses.get();
  }

  /** Counts a streamed body from the moment it is materialised until it ends, however it ends. */
  private HttpResponse counted(HttpResponse response) {
    ResponseEntity entity = response.entity();
    if (entity.isStrict() || !(entity.isDefault() || entity.isChunked())) {
      return response;
    }
    var body = entity.getDataBytes().watchTermination((mat, done) -> {
      streamingResponses.incrementAndGet();
      done.whenComplete((d, e) -> streamingResponses.decrementAndGet());
      return mat;
    });
    return response.withEntity(entity.isDefault()
        ? HttpEntities.create(entity.getContentType(), entity.getContentLengthOption().getAsLong(), body)
        : HttpEntities.createChunked(entity.getContentType(), body));
  }

  public CompletionStage<HttpResponse> handle(HttpRequest request) {
    try {
      String raw = rawPath(request);
      if (raw.startsWith("/-/")) {
        return CompletableFuture.completedFuture(admin(request, raw));
      }
      if (draining.get()) {
        return done(count("", "error", text(503, "this node is stopping")
            .addHeader(RawHeader.create("Connection", "close"))));
      }
      return artifact(request, raw).exceptionally(e -> {
        log.error("request {} failed", raw, e);
        return count("", "error", text(500, "internal error"));
      });
    } catch (RuntimeException e) {
      log.error("request failed", e);
      return done(count("", "error", text(500, "internal error")));
    }
  }

  // ---- artifacts ------------------------------------------------------------------------------

  private CompletionStage<HttpResponse> artifact(HttpRequest request, String raw) {
    if (request.method() != HttpMethods.GET && request.method() != HttpMethods.HEAD) {
      return done(count("", "error", text(405, "only GET and HEAD are served")
          .addHeader(RawHeader.create("Allow", "GET, HEAD"))));
    }
    RequestPath parsed = RequestPath.parse(withoutQuery(raw), true);
    if (parsed instanceof RequestPath.Rejected r) {
      return done(count("", "rejected", text(400, r.reason())));
    }
    RequestPath.Ok ok = (RequestPath.Ok) parsed;
    Repository repo = repos.get(ok.repo());
    if (repo == null) {
      return done(count("", "error", text(404, "unknown repository: " + ok.repo())));
    }
    if (!repo.allowsEncodedSlash() && ok.segments().stream().anyMatch(s -> s.indexOf('/') >= 0)) {
      return done(count("", "rejected", text(400, "encoded '/' in a path segment")));
    }
    RepoRequest repoRequest = new RepoRequest(ok.segments(), ok.upstreamPath(), request.getUri().rawQueryString(),
        request.getHeader("Accept").map(HttpHeader::value), baseUrl(request) + "/" + repo.name());
    CompletionStage<Target> resolved;
    try {
      resolved = repo.resolve(repoRequest, new CacheLookup(request));
    } catch (RuntimeException e) {
      resolved = CompletableFuture.failedFuture(e);
    }
    return resolved
        .thenCompose(target -> target(request, repo, target))
        .exceptionally(e -> {
          Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          if (t instanceof Lookup.LookupFailed f) {
            return count(repo.name(), "error", text(f.status(), f.getMessage()));
          }
          log.error("resolving {} in {} failed", ok.upstreamPath(), repo.name(), t);
          return count(repo.name(), "error", text(500, "internal error"));
        });
  }

  private CompletionStage<HttpResponse> target(HttpRequest request, Repository repo, Target target) {
    if (target instanceof Target.Artifact a) {
      CompletionStage<HttpResponse> served =
          a.rewrite().isPresent() ? rewritten(request, a) : serve(request, a.key(), a.mutable());
      return a.headers().isEmpty() ? served : served.thenApply(r -> r.addHeaders(raw(a.headers())));
    }
    if (target instanceof Target.Answer a) {
      // An answer made from what Corral holds counts as a hit; a refusal as an error.
      String result = a.status() < 300 ? "hit" : "error";
      return done(count(repo.name(), result, HttpResponse.create().withStatus(StatusCodes.get(a.status()))
          .withEntity(HttpEntities.create(ContentTypes.parse(a.contentType()), a.body()))
          .addHeaders(raw(a.headers()))));
    }
    if (target instanceof Target.Rejected r) {
      return done(count(repo.name(), "rejected", text(400, r.reason())));
    }
    return done(count(repo.name(), "error", text(404, ((Target.NotFound) target).reason())));
  }

  /**
   * A metadata body served rewritten: rewriting happens when a body is served, never in what is
   * stored. The stored body is read whole and rewritten; conditional requests and ranges are
   * answered against the rewritten bytes, whose ETag is their own hash.
   */
  private CompletionStage<HttpResponse> rewritten(HttpRequest request, Target.Artifact a) {
    HttpRequest whole = withoutHeaders(request, "Range", "If-Range", "If-None-Match", "If-Modified-Since");
    return serve(whole, a.key(), a.mutable()).thenCompose(r -> {
      if (r.status().intValue() != 200) {
        return done(r);
      }
      Via via = Via.valueOf(r.getHeader("X-Cache").map(HttpHeader::value).orElse(Via.HIT.name()));
      return r.entity().toStrict(WHOLE_BODY_WAIT.toMillis(), WHOLE_BODY_LIMIT, Materializer.matFromSystem(system))
          .thenApply(strict -> {
            ByteString body = a.rewrite().get().rewrite(strict.getData());
            List<Header> headers = new ArrayList<>();
            headers.add(new Header("Content-Type", strict.getContentType().toString()));
            headers.add(new Header("ETag", "\"" + sha256(body).substring(0, 32) + "\""));
            for (HttpHeader h : r.getHeaders()) {
              String n = h.lowercaseName();
              if (n.equals("last-modified") || n.equals("cache-control") || n.equals("expires")) {
                headers.add(new Header(h.name(), h.value()));
              }
            }
            HttpResponse out = responses.bytes(request, via, 200, headers, body);
            for (HttpHeader h : r.getHeaders()) { // what the serve path said of staleness
              if (h.lowercaseName().startsWith("x-corral-") || h.lowercaseName().equals("warning")) {
                out = out.addHeader(h);
              }
            }
            return out;
          });
    });
  }

  private static final Duration WHOLE_BODY_WAIT = Duration.ofMinutes(5);

  /** Reads other keys for a repository's {@link Repository#resolve}, on behalf of the same client. */
  private class CacheLookup implements Lookup {
    private final HttpRequest client;

    CacheLookup(HttpRequest client) {
      this.client = client;
    }

    @Override
    public CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
      HttpRequest get = HttpRequest.GET("/");
      Optional<ConnectionScope> scope = client.getAttribute(ConnectionScope.KEY);
      if (scope.isPresent()) {
        get = get.addAttribute(ConnectionScope.KEY, scope.get()); // the client hanging up cancels it too
      }
      return serve(get, key, mutable).thenCompose(r -> {
        int status = r.status().intValue();
        if (status == 200) {
          return r.entity().toStrict(WHOLE_BODY_WAIT.toMillis(), WHOLE_BODY_LIMIT, Materializer.matFromSystem(system))
              .thenApply(strict -> Optional.of(strict.getData()));
        }
        r.discardEntityBytes(system);
        if (status == 404 || status == 410) {
          return CompletableFuture.completedFuture(Optional.<ByteString>empty());
        }
        return CompletableFuture.failedFuture(new Lookup.LookupFailed(status == 504 ? 504 : 502,
            "could not read " + key.url() + " (" + status + ")"));
      });
    }

    @Override
    public Optional<ByteString> cached(ArtifactKey key) {
      Optional<StoredArtifact> stored = node.store().lookup(key);
      if (stored.isEmpty()) {
        return Optional.empty();
      }
      Optional<ByteString> hot = node.hot().get(stored.get().sha256());
      if (hot.isPresent()) {
        return hot;
      }
      try {
        return stored.get().size() <= WHOLE_BODY_LIMIT ? Optional.of(node.store().readAll(stored.get())) : Optional.empty();
      } catch (IOException e) {
        return Optional.empty();
      }
    }
  }

  /** The base URL clients reach this node at (see {@link PublicBase}). */
  private String baseUrl(HttpRequest request) {
    Addresses a = request.getAttribute(ADDRESSES).orElse(new Addresses(null, null));
    Optional<String> host = request.getHeader("X-Forwarded-Host").map(HttpHeader::value)
        .or(() -> request.getHeader("Host").map(HttpHeader::value));
    return publicBase.of(a.local(), a.remote(), request.getHeader("X-Forwarded-Proto").map(HttpHeader::value), host);
  }

  private static HttpRequest withoutHeaders(HttpRequest request, String... names) {
    HttpRequest out = request;
    for (String n : names) {
      out = out.removeHeader(n);
    }
    return out;
  }

  private static List<HttpHeader> raw(List<Header> headers) {
    return headers.stream().map(h -> (HttpHeader) RawHeader.create(h.name(), h.value())).toList();
  }

  private static String sha256(ByteString bytes) {
    try {
      MessageDigest md = MessageDigest.getInstance("SHA-256");
      md.update(bytes.asByteBuffer());
      return HexFormat.of().formatHex(md.digest());
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Answers a GET or HEAD for a key. A stored copy is served from this node's store at once when
   * the key is immutable, or when it is mutable metadata still within the repository's metadata
   * TTL; otherwise the key's entity decides (fetch, coalesce, or serve stale and revalidate).
   *
   * @param mutable the key is metadata that changes upstream (the repository adapter says so; see
   *     {@link Target.Artifact})
   */
  public CompletionStage<HttpResponse> serve(HttpRequest request, ArtifactKey key, boolean mutable) {
    Optional<StoredArtifact> hit = node.store().lookup(key)
        .filter(a -> !mutable || node.policy(key.repo()).isFresh(a, node.clock().millis()));
    if (hit.isPresent()) {
      return responses.stored(request, Via.HIT, hit.get())
          .thenCompose(r -> r.isPresent() ? done(count(key.repo(), Via.HIT, r.get())) : miss(request, key, mutable));
    }
    return miss(request, key, mutable);
  }

  private CompletionStage<HttpResponse> miss(HttpRequest request, ArtifactKey key, boolean mutable) {
    ConnectionScope scope = request.getAttribute(ConnectionScope.KEY).orElse(null);
    long token = scope != null ? scope.reserve() : waiters.cancels().reserve();
    return waiters.await(key, token, mutable)
        .thenCompose(answer -> answer(request, key, answer))
        .whenComplete((r, e) -> {
          if (scope != null) {
            scope.done(token);
          }
        });
  }

  private CompletionStage<HttpResponse> answer(HttpRequest request, ArtifactKey key, Waiters.Answer answer) {
    String repo = key.repo();
    FetchPolicy policy = node.policy(repo);
    if (answer instanceof Waiters.Cancelled) {
      return done(count(repo, "error", text(503, "client closed the connection")));
    }
    if (answer instanceof Waiters.TimedOut) {
      if (policy.bypassOnBudget()) {
        return bypass(key);
      }
      return done(count(repo, "error", text(504, "timed out waiting for the upstream")));
    }
    Reply reply = ((Waiters.Answered) answer).reply();
    if (reply instanceof Reply.Body b) {
      return done(count(repo, b.via(), responses.bytes(request, b.via(), 200, b.headers(), b.bytes())));
    }
    if (reply instanceof Reply.Stored s) {
      return responses.stored(request, s.via(), s.artifact())
          .thenApply(r -> r.isPresent() ? count(repo, s.via(), r.get())
              : count(repo, "error", text(502, "stored bytes of this artifact are missing or corrupt")));
    }
    if (reply instanceof Reply.Stale s) {
      return responses.stored(request, Via.STALE, s.artifact()).thenCompose(r -> {
        if (r.isPresent()) {
          return done(count(repo, Via.STALE, s.revalidationFailed() ? r.get().addHeader(REVALIDATION_FAILED) : r.get()));
        }
        // The revalidation replaced the stale bytes between the answer and this read: the
        // store now holds the fresh copy.
        Optional<StoredArtifact> current = node.store().lookup(key);
        if (current.isEmpty()) {
          return done(count(repo, "error", text(502, "stored bytes of this artifact are missing or corrupt")));
        }
        return responses.stored(request, Via.HIT, current.get())
            .thenApply(c -> c.isPresent() ? count(repo, Via.HIT, c.get())
                : count(repo, "error", text(502, "stored bytes of this artifact are missing or corrupt")));
      });
    }
    if (reply instanceof Reply.Streaming s) {
      var growing = node.downloads().find(s.downloadId());
      if (growing.isPresent()) {
        // A reader that starts after the download ended reads the committed bytes (GrowingBlob).
        return done(count(repo, s.via(), responses.streaming(s.via(), 200, s.headers(), s.length(), growing.get().reader())));
      }
      // The download ended between the reply and now: serve what it committed, if anything.
      Optional<StoredArtifact> stored = node.store().lookup(key);
      if (stored.isPresent()) {
        return responses.stored(request, s.via(), stored.get())
            .thenApply(r -> r.isPresent() ? count(repo, s.via(), r.get())
                : count(repo, "error", text(502, "upstream transfer failed")));
      }
      return done(count(repo, "error", text(502, "upstream transfer failed")));
    }
    if (reply instanceof Reply.NotFound nf) {
      return done(count(repo, nf.via(), text(nf.gone() ? 410 : 404, "not found upstream")
          .addHeader(RawHeader.create("X-Cache", nf.via().name()))));
    }
    if (reply instanceof Reply.Failed f) {
      return done(count(repo, "error", text(status(f.cause()), f.reason())));
    }
    return done(count(repo, "error", text(502, "unexpected answer: " + reply.getClass().getSimpleName())));
  }

  /** The status a client gets for a failed fetch. */
  static int status(Failure cause) {
    return switch (cause) {
      case UPSTREAM_TIMEOUT -> 504;
      case TOO_MANY_WAITERS -> 503;
      case UPSTREAM_ERROR, BAD_BYTES, PEER_ERROR, INTERNAL -> 502;
    };
  }

  /** The budget ran out and the repository allows it: one direct, uncached fetch for this client. */
  private CompletionStage<HttpResponse> bypass(ArtifactKey key) {
    String repo = key.repo();
    List<Header> accept = key.variant().isEmpty() ? List.of() : List.of(new Header("Accept", key.variant()));
    return node.upstream().get(new UpstreamRequest(repo, key.url(), accept))
        .thenApply(r -> {
          if (r.status() == 200) {
            var type = ArtifactResponses.contentType(r.headers());
            var entity = r.contentLength().isPresent()
                ? HttpEntities.create(type, r.contentLength().getAsLong(), r.body())
                : HttpEntities.createChunked(type, r.body());
            return count(repo, "bypass", HttpResponse.create().withEntity(entity)
                .addHeader(RawHeader.create("X-Cache", "BYPASS")));
          }
          r.body().runWith(Sink.cancelled(), system);
          if (r.status() == 404 || r.status() == 410) {
            return count(repo, "bypass", text(r.status(), "not found upstream")
                .addHeader(RawHeader.create("X-Cache", "BYPASS")));
          }
          return count(repo, "error", text(502, "upstream answered " + r.status()));
        })
        .exceptionally(e -> {
          Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
          boolean timeout = t instanceof UpstreamException u && u.isTimeout();
          log.warn("bypass fetch of {} failed: {}", key, t.toString());
          return count(repo, "error", text(timeout ? 504 : 502, "upstream error: " + t.getMessage()));
        });
  }

  private HttpResponse count(String repo, Via via, HttpResponse response) {
    if (via == Via.COALESCED) {
      metrics.coalesced.labelValues(repo).inc();
    }
    return count(repo, via.name().toLowerCase(Locale.ROOT), response);
  }

  private HttpResponse count(String repo, String result, HttpResponse response) {
    metrics.requests.labelValues(repo, result).inc();
    return response;
  }

  // ---- /-/ endpoints --------------------------------------------------------------------------

  private HttpResponse admin(HttpRequest request, String raw) {
    String path = raw.indexOf('?') >= 0 ? raw.substring(0, raw.indexOf('?')) : raw;
    boolean get = request.method() == HttpMethods.GET || request.method() == HttpMethods.HEAD;
    if (get && path.equals("/-/health/live")) {
      return text(200, "live");
    }
    if (get && path.equals("/-/health/ready")) {
      return ready.get() ? text(200, "ready") : text(503, "not ready");
    }
    if (get && path.equals("/-/metrics")) {
      return metrics();
    }
    if (path.startsWith(PeerEndpoint.PREFIX)) {
      return peer.handle(request, path); // internal: other nodes copy bytes from here
    }
    if (path.startsWith("/-/cache/")) {
      if (request.method() != HttpMethods.DELETE) {
        return text(405, "purge with DELETE").addHeader(RawHeader.create("Allow", "DELETE"));
      }
      return purge(request, "/" + path.substring("/-/cache/".length()) + query(raw));
    }
    return text(404, "no such endpoint");
  }

  private HttpResponse purge(HttpRequest request, String repoPath) {
    if (adminToken.isEmpty()) {
      return text(403, "purge is disabled: no admin token is configured");
    }
    String auth = request.getHeader("Authorization").map(h -> h.value()).orElse("");
    byte[] given = auth.startsWith("Bearer ") ? auth.substring(7).trim().getBytes(StandardCharsets.UTF_8) : new byte[0];
    if (!MessageDigest.isEqual(given, adminToken.get().getBytes(StandardCharsets.UTF_8))) {
      return text(401, "a valid admin bearer token is required").addHeader(RawHeader.create("WWW-Authenticate", "Bearer"));
    }
    RequestPath parsed = RequestPath.parse(repoPath.contains("?") ? repoPath.substring(0, repoPath.indexOf('?')) : repoPath, true);
    if (parsed instanceof RequestPath.Rejected r) {
      return text(400, r.reason());
    }
    RequestPath.Ok ok = (RequestPath.Ok) parsed;
    Repository repo = repos.get(ok.repo());
    if (repo == null) {
      return text(404, "unknown repository: " + ok.repo());
    }
    Optional<String> q = repoPath.contains("?") ? Optional.of(repoPath.substring(repoPath.indexOf('?') + 1)) : Optional.empty();
    // Purge resolves with what this node holds (a cached packument names a tarball's digest) and
    // never fetches to find out.
    Lookup cachedOnly = new CacheLookup(request) {
      @Override
      public CompletionStage<Optional<ByteString>> body(ArtifactKey k, boolean mutable) {
        return CompletableFuture.completedFuture(cached(k));
      }
    };
    Optional<ArtifactKey> key;
    try {
      RepoRequest repoRequest = new RepoRequest(ok.segments(), ok.upstreamPath(), q,
          request.getHeader("Accept").map(HttpHeader::value), baseUrl(request) + "/" + repo.name());
      Target target = repo.resolve(repoRequest, cachedOnly).toCompletableFuture().get(10, TimeUnit.SECONDS);
      key = target instanceof Target.Artifact a ? Optional.of(a.key()) : Optional.empty();
    } catch (Exception e) {
      return text(500, "purge failed: " + e.getMessage());
    }
    if (key.isEmpty()) {
      return text(404, "no artifact at this path");
    }

    boolean held;
    try {
      held = node.store().remove(key.get());
    } catch (IOException e) {
      return text(500, "purge failed: " + e.getMessage());
    }
    ClusterSharding.get(system)
        .entityRefFor(FetchEntity.TYPE_KEY, key.get().id())
        .ask(FetchEntity.Purge::new, Duration.ofSeconds(10))
        .whenComplete((done, e) -> {
          if (e != null) {
            log.warn("purge of {} reached this node's store but not its entity: {}", key.get(), e.toString());
          }
        });
    return held ? text(200, "purged") : text(404, "not cached");
  }

  private HttpResponse metrics() {
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      PrometheusTextFormatWriter.create().write(out, metrics.registry().scrape());
      return HttpResponse.create().withEntity(HttpEntities.create(
          ContentTypes.parse("text/plain; version=0.0.4; charset=utf-8"), ByteString.fromArray(out.toByteArray())));
    } catch (IOException e) {
      return text(500, "metrics failed");
    }
  }

  // ---- helpers --------------------------------------------------------------------------------

  /** The request target exactly as the client sent it (Raw-Request-URI), query included. */
  static String rawPath(HttpRequest request) {
    return request.getHeader("Raw-Request-URI").map(h -> h.value())
        .orElseGet(() -> request.getUri().getPathString()
            + request.getUri().rawQueryString().map(q -> "?" + q).orElse(""));
  }

  private static String withoutQuery(String raw) {
    int i = raw.indexOf('?');
    return i >= 0 ? raw.substring(0, i) : raw;
  }

  private static String query(String raw) {
    int i = raw.indexOf('?');
    return i >= 0 ? raw.substring(i) : "";
  }

  static HttpResponse text(int status, String reason) {
    return HttpResponse.create()
        .withStatus(StatusCodes.get(status))
        .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, reason + "\n"));
  }

  private static CompletionStage<HttpResponse> done(HttpResponse response) {
    return CompletableFuture.completedFuture(response);
  }
}
