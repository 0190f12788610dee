package dev.corral.http.upstream;

import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.http.metrics.Metrics;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import dev.corral.core.upstream.ExactLength;
import java.net.ConnectException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Cancellable;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.settings.ClientConnectionSettings;
import org.apache.pekko.http.javadsl.settings.ConnectionPoolSettings;
import org.apache.pekko.http.scaladsl.coding.Coders;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Upstream} on the Pekko HTTP client: one host connection pool per upstream host and
 * repository settings, timeouts per repository, the fetch's bounded retries, redirects, gzip,
 * Content-Length checks and per-repository credentials.
 *
 * <p>Pekko HTTP's pool defaults are replaced, never inherited from configuration: 4 connections
 * and 32 open requests would make distinct keys wait on each other (SEMANTICS K2), and the
 * pool's own 5 retries would multiply upstream requests behind the fetch's back (F1).
 *
 * <p>Only URLs inside the repository's {@link UpstreamScope} are requested: the URL given and
 * every redirect hop are admitted by it first, and the pool's transport checks the address it
 * connects to. A refusal fails the fetch with reason {@code refused}, before any connection.
 * Messages and logs name upstream URLs without their query ({@link QuerylessUrl}).
 *
 * <p>With {@link UpstreamSettings#registryTokens} a 401 from the repository's own origin that
 * carries a {@code Bearer} challenge is answered once per fetch: a token from the challenge's realm
 * ({@link RegistryTokens}, asked with the credential only under {@link UpstreamScope#admitRealm}),
 * then the same request again with {@code Authorization: Bearer}. The token goes where the
 * credential goes (the first base), so never to a redirect target on another host; neither it nor
 * the credential is ever logged or put in a message.
 */
public final class HttpUpstream implements Upstream {
  static final String USER_AGENT = "corral/0.1";

  private static final Logger log = LoggerFactory.getLogger(HttpUpstream.class);

  /** Response headers that describe one connection or the encoded body, not the artifact. */
  private static final Set<String> NOT_FORWARDED =
      Set.of("connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
          "te", "trailer", "transfer-encoding", "upgrade", "content-length", "content-encoding", "content-type");

  /** Request headers this client owns; a caller's value for them is dropped. */
  private static final Set<String> OWN_REQUEST_HEADERS =
      Set.of("authorization", "accept-encoding", "user-agent", "host", "connection", "content-length",
          "transfer-encoding", "te", "upgrade");

  private static final Set<Integer> REDIRECTS = Set.of(301, 302, 303, 307, 308);

  /** The largest token realm answer read; a larger one is refused as invalid. */
  private static final int MAX_TOKEN_ANSWER = 64 * 1024;

  /** The reason of a fetch failed because its token realm's answer held no usable token. */
  static final String TOKEN = "token";

  private final ActorSystem<?> system;
  private final Metrics metrics;
  private final Http http;
  private final HttpsConnectionContext https;
  private final LoggingAdapter poolLog;
  private final Map<String, Repo> repos;
  private final Ticker ticker;

  private final Optional<EgressProxy> proxy;

  /** @param queue the repository's requests waiting for a pool connection (K2: queued, never failed) */
  private record Repo(String name, UpstreamScope scope, UpstreamSettings settings, ConnectionPoolSettings pool,
      Optional<HttpsConnectionContext> https, Optional<EgressProxy> proxy, ConnectionPoolSettings proxied,
      PoolQueue queue, Optional<RegistryTokens> tokens) {
    /** The pool settings for a request to {@code url}: through the egress proxy unless its host is exempt. */
    ConnectionPoolSettings poolFor(URI url) {
      return url.getHost() != null && EgressProxy.forHost(proxy, url.getHost()).isPresent() ? proxied : pool;
    }
  }

  /** Scheme, host and port: where a repository's credential may be sent. */
  record Origin(String scheme, String host, int port) {
    static Origin of(URI uri) {
      String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
      String host = uri.getHost() == null ? "" : uri.getHost().toLowerCase(Locale.ROOT);
      int port = uri.getPort() != -1 ? uri.getPort() : scheme.equals("https") ? 443 : 80;
      return new Origin(scheme, host, port);
    }
  }

  /**
   * @param repos every repository's upstream by repository name; a request for another name fails
   */
  public HttpUpstream(ActorSystem<?> system, Metrics metrics, Map<String, RepoUpstream> repos) {
    this(system, metrics, repos, Optional.empty());
  }

  /**
   * @param proxy the egress proxy for every repository's upstream requests ({@link EgressProxy})
   */
  public HttpUpstream(ActorSystem<?> system, Metrics metrics, Map<String, RepoUpstream> repos,
      Optional<EgressProxy> proxy) {
    this(system, metrics, repos, proxy, Ticker.systemTicker());
  }

  /**
   * @param ticker the time registry tokens are kept by ({@link RegistryToken#expiresAtNanos})
   */
  public HttpUpstream(ActorSystem<?> system, Metrics metrics, Map<String, RepoUpstream> repos,
      Optional<EgressProxy> proxy, Ticker ticker) {
    this.ticker = ticker;
    this.proxy = proxy;
    this.system = system;
    this.metrics = metrics;
    this.http = Http.get(system);
    this.https = http.defaultClientHttpsContext();
    this.poolLog = Adapter.toClassic(system).log();
    this.repos =
        repos.entrySet().stream()
            .collect(Collectors.toUnmodifiableMap(Map.Entry::getKey, e -> repo(e.getKey(), e.getValue())));
  }

  private Repo repo(String name, RepoUpstream upstream) {
    absolute(upstream.baseUrl());
    ConnectionPoolSettings plain = poolSettings(system, upstream.settings());
    // Every direct connection of this repository's pool goes through its scope's address check;
    // through the egress proxy the proxy resolves the host (the origin and path checks still hold).
    ConnectionPoolSettings pool = plain.withConnectionSettings(plain.getConnectionSettings().withTransport(
        ScopedTransport.of(upstream.scope(), system.dispatchers().lookup(DispatcherSelector.blocking()))));
    return new Repo(name, upstream.scope(), upstream.settings(), pool, upstream.tls().connectionContext(), proxy,
        proxy.map(p -> p.applyTo(plain)).orElse(pool), queue(name, upstream.settings().maxConnections()),
        upstream.settings().registryTokens() ? Optional.of(new RegistryTokens(ticker)) : Optional.empty());
  }

  private PoolQueue queue(String repo, int maxConnections) {
    PoolQueue queue = new PoolQueue(repo, maxConnections);
    metrics.upstreamQueue(repo, queue::waiting);
    return queue;
  }

  /** The pool settings for one repository, set from its settings rather than from configuration. */
  static ConnectionPoolSettings poolSettings(ActorSystem<?> system, UpstreamSettings s) {
    ConnectionPoolSettings defaults = ConnectionPoolSettings.create(Adapter.toClassic(system));
    Duration longestWait = max(s.firstByteTimeout(), s.idleTimeout());
    ClientConnectionSettings connection =
        defaults.getConnectionSettings()
            .withConnectingTimeout(s.connectTimeout())
            // A backstop that frees connections nobody answers on. It must not fire before the
            // first-byte or between-chunks timeouts, which give the failure its meaning.
            .withIdleTimeout(longestWait.plusSeconds(5));
    return defaults
        .withMaxConnections(s.maxConnections())
        .withMaxOpenRequests(s.maxOpenRequests())
        .withMaxRetries(0)
        // The pool fails an entity not subscribed to within this time; a waiter may take a moment.
        .withResponseEntitySubscriptionTimeout(longestWait)
        .withConnectionSettings(connection);
    // The pool's own idle-timeout only stops a pool with no request or entity in flight, so it
    // never cuts a download and keeps its default.
  }

  @Override
  public CompletionStage<UpstreamResponse> get(UpstreamRequest request) {
    Repo repo = repos.get(request.repo());
    if (repo == null) {
      return CompletableFuture.failedFuture(
          new IllegalArgumentException("no upstream configured for repository " + request.repo()));
    }
    URI url;
    try {
      url = absolute(request.url());
    } catch (IllegalArgumentException e) {
      return CompletableFuture.failedFuture(e);
    }
    Fetch fetch = new Fetch(repo, extraHeaders(request.headers()), Optional.empty());
    if (repo.tokens.isEmpty()) {
      return fetch.attempt(url, 0, 0);
    }
    return repo.tokens.get().cachedFor(url).thenCompose(grant -> {
      fetch.grant = grant;
      return fetch.attempt(url, 0, 0);
    });
  }

  private static List<HttpHeader> extraHeaders(List<Header> headers) {
    List<HttpHeader> out = new ArrayList<>();
    for (Header h : headers) {
      if (!OWN_REQUEST_HEADERS.contains(h.name().toLowerCase(Locale.ROOT))) {
        out.add(HttpHeader.parse(h.name(), h.value()));
      }
    }
    out.add(HttpHeader.parse("User-Agent", USER_AGENT));
    // identity: a compressed transfer hides the body's length until it ends, and the exact
    // length is what lets waiters stream a large body while it downloads (SEMANTICS B2) and
    // stops their budget once the headers are in (W3). Artifacts are compressed already. A gzip
    // answer sent anyway is still decoded below.
    out.add(HttpHeader.parse("Accept-Encoding", "identity"));
    return List.copyOf(out);
  }

  /** A token request's {@code Authorization}: sent to the realm's origin only (never to a redirect elsewhere). */
  private record TokenRequest(Origin realm, Optional<String> authorization) {
    @Override
    public String toString() {
      return "TokenRequest[" + realm + "]";
    }
  }

  /** One {@link #get}, or one token request: attempts, redirects and retries for one URL. */
  private final class Fetch {
    private final Repo repo;
    private final List<HttpHeader> headers;
    /** Present for a token request, which answers no challenge itself. */
    private final Optional<TokenRequest> tokenRequest;
    /** The registry token sent to the repository's own origin instead of the credential, once there is one. */
    private Optional<RegistryTokens.Grant> grant = Optional.empty();
    /** Whether this fetch answered a Bearer challenge already: it does so once, a second 401 is the answer. */
    private boolean challenged;

    Fetch(Repo repo, List<HttpHeader> headers, Optional<TokenRequest> tokenRequest) {
      this.repo = repo;
      this.headers = headers;
      this.tokenRequest = tokenRequest;
    }

    /**
     * @param failures attempts of this fetch that failed so far (each may be retried)
     * @param redirects redirects followed so far (they are not failures)
     */
    CompletionStage<UpstreamResponse> attempt(URI url, int failures, int redirects) {
      UpstreamScope.Admission admission;
      try {
        admission = repo.scope.admit(url);
      } catch (UpstreamScope.Refused e) {
        return CompletableFuture.failedFuture(refused(url, e));
      }
      return firstByte(url, admission)
          .handle(
              (response, error) -> {
                try {
                  return error != null
                      ? onFailure(url, failures, redirects, error)
                      : onResponse(url, failures, redirects, response, admission);
                } catch (RuntimeException e) {
                  return CompletableFuture.<UpstreamResponse>failedFuture(e);
                }
              })
          .thenCompose(stage -> stage);
    }

    private CompletionStage<UpstreamResponse> onFailure(URI url, int failures, int redirects, Throwable error) {
      if (unwrap(error) instanceof UpstreamException full && full.isQueueFull()) {
        count(UpstreamException.QUEUE_FULL); // refused before any request: not retried
        log.warn("upstream {} request refused: {}", repo.name, full.getMessage());
        return CompletableFuture.failedFuture(full);
      }
      Optional<UpstreamScope.Refused> refusal = refusal(error);
      if (refusal.isPresent()) {
        return CompletableFuture.failedFuture(refused(url, refusal.get()));
      }
      Failure failure = Failure.of(error);
      count(failure.label);
      if (failures < repo.settings.retries()) {
        log.debug("upstream {} attempt failed ({}), retrying: {}", repo.name, failure.label, QuerylessUrl.of(url));
        return retry(failures, () -> attempt(url, failures + 1, redirects));
      }
      return CompletableFuture.failedFuture(
          new UpstreamException(failure.label, failure.describe(url, error), failure.timeout, unwrap(error)));
    }

    /** Counted, logged (host and path, no query) and shown without the URL. */
    private UpstreamException refused(URI url, UpstreamScope.Refused e) {
      count("refused");
      log.warn("upstream {} request to {} refused: {}", repo.name, QuerylessUrl.of(url), e.getMessage());
      return new UpstreamException("refused", e.getMessage(), false, null);
    }

    private CompletionStage<UpstreamResponse> onResponse(URI url, int failures, int redirects, Answered answered,
        UpstreamScope.Admission admission) {
      HttpResponse response = answered.response();
      int status = response.status().intValue();
      count(Integer.toString(status));
      if (status == 401 && challenged && grant.isPresent()) {
        // The token given for the challenge is refused too: the answer stands, and the next fetch
        // does not take that token again.
        repo.tokens.orElseThrow().forget(grant.get());
      }
      Optional<BearerChallenge> challenge = status == 401 ? challenge(response, admission) : Optional.empty();
      if (challenge.isPresent()) {
        discard(answered);
        challenged = true;
        Optional<RegistryTokens.Grant> refused = grant;
        grant = Optional.empty();
        log.debug("upstream {} answered 401 with a Bearer challenge ({}): {}", repo.name, challenge.get(), QuerylessUrl.of(url));
        return repo.tokens.orElseThrow().answer(challenge.get(), refused, c -> token(url, c))
            .thenCompose(granted -> {
              grant = Optional.of(granted);
              return attempt(url, failures, redirects);
            });
      }
      Optional<String> location = response.getHeader("Location").map(HttpHeader::value);
      if (REDIRECTS.contains(status) && location.isPresent()) {
        discard(answered);
        if (redirects >= repo.settings.maxRedirects()) {
          throw new UpstreamException(
              "redirect", "more than " + repo.settings.maxRedirects() + " redirects from " + QuerylessUrl.of(url), false, null);
        }
        return attempt(redirectTarget(url, location.get()), failures, redirects + 1);
      }
      if (status >= 500) {
        discard(answered);
        if (failures < repo.settings.retries()) {
          log.debug("upstream {} answered {}, retrying: {}", repo.name, status, QuerylessUrl.of(url));
          return retry(failures, () -> attempt(url, failures + 1, redirects));
        }
        throw new UpstreamException(Integer.toString(status), "upstream answered " + status + " for " + QuerylessUrl.of(url), false, null);
      }
      return CompletableFuture.completedFuture(toUpstreamResponse(url, answered));
    }

    /**
     * The Bearer challenge this 401 is to be answered with: only with the token flow on, only the
     * repository's own origin's (the first base, where the credential goes: a redirect target's
     * challenge is the answer as it is), once per fetch, never for a token request.
     */
    private Optional<BearerChallenge> challenge(HttpResponse response, UpstreamScope.Admission admission) {
      if (repo.tokens.isEmpty() || tokenRequest.isPresent() || challenged
          || admission != UpstreamScope.Admission.WITH_CREDENTIAL) {
        return Optional.empty();
      }
      List<String> values = new ArrayList<>();
      for (HttpHeader h : response.getHeaders()) {
        if (h.lowercaseName().equals("www-authenticate")) values.add(h.value());
      }
      return BearerChallenge.in(values);
    }

    /**
     * A token for {@code challenge}, which the answer to {@code challenged} named: the realm must
     * be in the repository's scope ({@link UpstreamScope#admitRealm}, which also decides whether
     * the credential goes with it) and must not leave https for http. Counted by outcome.
     */
    private CompletionStage<RegistryToken> token(URI challenged, BearerChallenge challenge) {
      URI realm = challenge.realm();
      UpstreamScope.Admission admission;
      try {
        if (challenge.leavesHttps(challenged)) {
          throw new UpstreamScope.Refused("upstream request refused by policy: the token realm leaves https for http");
        }
        admission = repo.scope.admitRealm(realm);
      } catch (UpstreamScope.Refused e) {
        countToken("refused");
        return CompletableFuture.failedFuture(refused(realm, e));
      }
      Optional<String> credential = admission == UpstreamScope.Admission.WITH_CREDENTIAL
          ? repo.settings.credential().map(Credential::authorization) : Optional.empty();
      List<HttpHeader> tokenHeaders = new ArrayList<>(extraHeaders(List.of()));
      tokenHeaders.add(HttpHeader.parse("Accept", "application/json"));
      Fetch request = new Fetch(repo, tokenHeaders, Optional.of(new TokenRequest(Origin.of(realm), credential)));
      long sent = ticker.read();
      CompletionStage<RegistryToken> token = request.attempt(challenge.tokenUrl(), 0, 0)
          .thenCompose(answer -> tokenOf(realm, answer, sent));
      return token.whenComplete((t, error) -> {
        if (error == null) {
          countToken("ok");
          log.debug("upstream {} got a registry token for {} from {}", repo.name, challenge.scopes(), QuerylessUrl.of(realm));
        } else {
          Throwable cause = unwrap(error);
          String reason = cause instanceof UpstreamException u ? u.reason() : "error";
          if (!reason.equals(TOKEN)) {
            countToken(reason); // a failure of the request itself; tokenOf counts what it refuses
          }
          log.warn("upstream {} registry token request failed: {}", repo.name, cause.getMessage());
        }
      });
    }

    /** The token in a realm's answer: a 200 with a JSON body of at most {@link #MAX_TOKEN_ANSWER} bytes. */
    private CompletionStage<RegistryToken> tokenOf(URI realm, UpstreamResponse answer, long sent) {
      if (answer.status() != 200) {
        answer.body().runWith(Sink.ignore(), system);
        return CompletableFuture.failedFuture(tokenFailure(Integer.toString(answer.status()),
            "the token realm answered " + answer.status() + ": " + QuerylessUrl.of(realm)));
      }
      return answer.body()
          .limitWeighted(MAX_TOKEN_ANSWER, b -> (long) b.size())
          .runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), system)
          .handle((bytes, error) -> {
            if (error != null) {
              throw unwrap(error) instanceof UpstreamException u ? u
                  : tokenFailure("invalid", "the token realm's answer is larger than 64 KiB: " + QuerylessUrl.of(realm));
            }
            try {
              return RegistryToken.parse(bytes.toArray(), sent);
            } catch (IllegalArgumentException e) {
              throw tokenFailure("invalid", e.getMessage() + ": " + QuerylessUrl.of(realm));
            }
          });
    }

    /** An answer without a usable token, counted as {@code outcome}; reason {@link #TOKEN}, never quoting the answer. */
    private UpstreamException tokenFailure(String outcome, String message) {
      countToken(outcome);
      return new UpstreamException(TOKEN, message, false, null);
    }

    private void countToken(String outcome) {
      metrics.upstreamTokenFetches.labelValues(repo.name, outcome).inc();
    }

    /** What goes as {@code Authorization} to {@code url}, which the scope admitted as {@code admission}. */
    private Optional<String> authorization(URI url, UpstreamScope.Admission admission) {
      if (tokenRequest.isPresent()) {
        return Origin.of(url).equals(tokenRequest.get().realm()) ? tokenRequest.get().authorization() : Optional.empty();
      }
      if (admission != UpstreamScope.Admission.WITH_CREDENTIAL) {
        return Optional.empty();
      }
      return grant.isPresent()
          ? Optional.of(grant.get().token().authorization())
          : repo.settings.credential().map(Credential::authorization);
    }

    /**
     * The status and headers of one request, or a failure once the first-byte timeout passed. The
     * request first waits its turn in the repository's {@link PoolQueue}; the timeout counts from
     * when it leaves the queue (its time waiting for a connection is not the upstream's delay).
     */
    private CompletionStage<Answered> firstByte(URI url, UpstreamScope.Admission admission) {
      List<HttpHeader> requestHeaders = new ArrayList<>(headers);
      authorization(url, admission).ifPresent(a -> requestHeaders.add(HttpHeader.parse("Authorization", a)));
      HttpRequest request = HttpRequest.GET(url.toASCIIString()).addHeaders(requestHeaders);
      return repo.queue.enter().thenCompose(slot -> sent(url, request, slot));
    }

    private CompletionStage<Answered> sent(URI url, HttpRequest request, PoolQueue.Slot slot) {
      CompletableFuture<Answered> bounded = new CompletableFuture<>();
      Duration timeout = repo.settings.firstByteTimeout();
      Cancellable timer =
          system.scheduler().scheduleOnce(
              timeout,
              () -> bounded.completeExceptionally(new FirstByteTimeout("no response headers within " + timeout)),
              system.executionContext());
      CompletionStage<HttpResponse> response;
      try {
        response = http.singleRequest(request, repo.https.orElse(https), repo.poolFor(url), poolLog);
      } catch (RuntimeException e) {
        response = CompletableFuture.failedFuture(e);
      }
      response.whenComplete(
          (answer, error) -> {
            timer.cancel();
            if (error != null) {
              slot.release();
              bounded.completeExceptionally(error);
            } else if (!bounded.complete(new Answered(answer, slot))) {
              // Too late: nobody will read it. Drained, not cancelled: a cancelled entity
              // made Pekko's pool fail the next request queued on that connection. (For a
              // large artifact this downloads it once more; it happens only after a
              // first-byte timeout.) The slot is held until the connection is free.
              discard(new Answered(answer, slot));
            }
          });
      return bounded;
    }

    /** Drains a response nobody reads, then frees its slot. */
    private void discard(Answered answered) {
      answered.response().discardEntityBytes(system).completionStage()
          .whenComplete((done, error) -> answered.slot().release());
    }

    private CompletionStage<UpstreamResponse> retry(int failures, Supplier<CompletionStage<UpstreamResponse>> next) {
      Duration pause = repo.settings.retryBackoff().multipliedBy(1L << Math.min(failures, 10));
      CompletableFuture<Void> paused = new CompletableFuture<>();
      system.scheduler().scheduleOnce(pause, () -> paused.complete(null), system.executionContext());
      return paused.thenCompose(ignored -> next.get());
    }

    private UpstreamResponse toUpstreamResponse(URI url, Answered answered) {
      HttpResponse response = answered.response();
      HttpEntity entity = response.entity();
      String encoding =
          response.getHeader("Content-Encoding").map(h -> h.value().trim().toLowerCase(Locale.ROOT)).orElse("identity");
      Flow<ByteString, ByteString, NotUsed> decoder;
      switch (encoding) {
        case "identity":
        case "":
          decoder = null;
          break;
        case "gzip":
        case "x-gzip":
          decoder = Coders.Gzip().decoderFlow().asJava();
          break;
        case "deflate":
          decoder = Coders.Deflate().decoderFlow().asJava();
          break;
        default:
          discard(answered);
          throw new UpstreamException("encoding", "unsupported Content-Encoding " + encoding + " from " + QuerylessUrl.of(url), false, null);
      }

      OptionalLong declared = entity.getContentLengthOption();
      // The slot is freed when the body ends however it ends (the caller must read or cancel it).
      // Released on the thread that ends the body (a plain whenComplete on Pekko's stage would
      // wake a common pool thread for it); a request waiting for the slot is sent from there.
      Source<ByteString, ?> bytes = entity.getDataBytes().watchTermination((mat, done) -> {
        done.whenCompleteAsync((d, e) -> answered.slot().release(), Runnable::run);
        return mat;
      });
      if (declared.isPresent()) {
        bytes = bytes.via(new ExactLength(declared.getAsLong()));
      }
      Duration idle = repo.settings.idleTimeout();
      bytes = bytes.idleTimeout(idle);
      if (decoder != null) {
        bytes = bytes.via(decoder);
      }
      Source<ByteString, NotUsed> body =
          bytes
              .mapError(Throwable.class, e -> bodyFailure(url, idle, e))
              .mapMaterializedValue(ignored -> NotUsed.getInstance());

      return new UpstreamResponse(
          response.status().intValue(),
          forwardedHeaders(response),
          decoder == null ? declared : OptionalLong.empty(),
          body);
    }

    private void count(String label) {
      metrics.upstreamRequests.labelValues(repo.name, label).inc();
    }
  }

  /** A response and the pool slot its request holds until the response is done with. */
  private record Answered(HttpResponse response, PoolQueue.Slot slot) {}

  private static Throwable bodyFailure(URI url, Duration idle, Throwable e) {
    if (e instanceof UpstreamException) return e;
    if (e instanceof TimeoutException) {
      return new UpstreamException("timeout", "upstream body stalled for " + idle + ": " + QuerylessUrl.of(url), true, e);
    }
    return new UpstreamException("reset", "upstream body broke off (" + e.getMessage() + "): " + QuerylessUrl.of(url), false, e);
  }

  /** Response headers worth keeping with the artifact; Content-Type comes back from the entity. */
  static List<Header> forwardedHeaders(HttpResponse response) {
    Set<String> connectionScoped = new HashSet<>();
    response.getHeader("Connection").ifPresent(h -> {
      for (String token : h.value().split(",")) connectionScoped.add(token.trim().toLowerCase(Locale.ROOT));
    });
    List<Header> out = new ArrayList<>();
    var contentType = response.entity().getContentType();
    if (!contentType.equals(ContentTypes.NO_CONTENT_TYPE)) {
      out.add(new Header("Content-Type", contentType.toString()));
    }
    for (HttpHeader h : response.getHeaders()) {
      String name = h.lowercaseName();
      if (!NOT_FORWARDED.contains(name) && !connectionScoped.contains(name)) {
        out.add(new Header(h.name(), h.value()));
      }
    }
    return out;
  }

  /**
   * Where a redirect from {@code from} to {@code location} leads; fails with reason {@code
   * redirect} for a target that is not http(s) or that leaves https for http.
   */
  static URI redirectTarget(URI from, String location) {
    URI to;
    try {
      to = from.resolve(new URI(location.trim()));
    } catch (URISyntaxException | IllegalArgumentException e) {
      throw new UpstreamException("redirect", "unusable redirect Location from " + QuerylessUrl.of(from), false, e);
    }
    String scheme = to.getScheme() == null ? "" : to.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || to.getHost() == null) {
      throw new UpstreamException("redirect", "redirect from " + QuerylessUrl.of(from) + " to a non-http URL", false, null);
    }
    if (from.getScheme().equalsIgnoreCase("https") && scheme.equals("http")) {
      throw new UpstreamException("redirect", "refused redirect from https to http: " + QuerylessUrl.of(from) + " -> " + QuerylessUrl.of(to), false, null);
    }
    return to;
  }

  private static URI absolute(String url) {
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("not a valid upstream URL: " + QuerylessUrl.of(url), e);
    }
    String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || uri.getHost() == null) {
      throw new IllegalArgumentException("not an absolute http(s) URL: " + QuerylessUrl.of(url));
    }
    return uri;
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  /** The scope's refusal behind a failed connection, if that is what failed it. */
  private static Optional<UpstreamScope.Refused> refusal(Throwable error) {
    for (Throwable t = error; t != null; t = t.getCause()) {
      if (t instanceof UpstreamScope.Refused r) return Optional.of(r);
    }
    return Optional.empty();
  }

  private static Throwable unwrap(Throwable e) {
    while (e instanceof CompletionException && e.getCause() != null) e = e.getCause();
    return e;
  }

  private static final class FirstByteTimeout extends TimeoutException {
    FirstByteTimeout(String message) {
      super(message);
    }
  }

  /** What an attempt that got no response counts as, in the metric and the final exception. */
  private enum Failure {
    TIMEOUT("timeout", true),
    CONNECT_ERROR("connect-error", false),
    RESET("reset", false);

    final String label;
    final boolean timeout;

    Failure(String label, boolean timeout) {
      this.label = label;
      this.timeout = timeout;
    }

    static Failure of(Throwable error) {
      Throwable e = unwrap(error);
      if (e instanceof TimeoutException) return TIMEOUT;
      boolean connecting = false;
      for (Throwable t = e; t != null; t = t.getCause()) {
        String message = String.valueOf(t.getMessage());
        // Pekko reports a failed TCP connect as a StreamTcpException naming the Connect command;
        // a connect that timed out says so in the message.
        if (message.contains("Connect timeout")) return TIMEOUT;
        if (t instanceof ConnectException || t instanceof UnknownHostException
            || message.contains("Tcp command [Connect(")) {
          connecting = true;
        }
      }
      return connecting ? CONNECT_ERROR : RESET;
    }

    /**
     * Shown to clients: the URL without its query, and the innermost cause's type and, for a
     * refused or failed connect, its message ("Connection refused"), never the address the pool
     * connected to.
     */
    String describe(URI url, Throwable error) {
      Throwable root = unwrap(error);
      while (root.getCause() != null && root.getCause() != root) root = root.getCause();
      String detail = root instanceof TimeoutException || root instanceof ConnectException
          ? String.valueOf(root.getMessage()) : root.getClass().getSimpleName();
      return "upstream " + label + " for " + QuerylessUrl.of(url) + ": " + detail;
    }
  }
}
