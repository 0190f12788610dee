package dev.corral.http;

import static dev.corral.http.Answers.done;
import static dev.corral.http.Answers.text;

import dev.corral.core.fetch.Node;
import dev.corral.core.download.Failure;
import dev.corral.core.download.FetchSource;
import dev.corral.core.download.FetchSources;
import dev.corral.core.fetch.Via;
import dev.corral.core.wait.ByteBudget;
import dev.corral.core.wait.Waiters;
import dev.corral.core.wait.WholeBodies;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Sha256;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.registry.BodyRewrite;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.ResponseEntity;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code GET}/{@code HEAD /{repo}/{path}}: validates the path, lets the repository resolve it to a
 * key (reading other keys it must know through the cache) and serves that key, rewritten for the
 * client when the repository says so.
 */
final class ArtifactRoute {
  private static final Logger log = LoggerFactory.getLogger(ArtifactRoute.class);

  /** Most a metadata body may be when it is read whole (rewritten, or looked up by a repository). */
  static final int WHOLE_BODY_LIMIT = 128 * 1024 * 1024;
  private static final Duration WHOLE_BODY_WAIT = Duration.ofMinutes(5);
  /** What a client told to come back (503, the metadata budget full) is told to wait, seconds. */
  static final int RETRY_AFTER_SECONDS = 2;

  private final ActorSystem<?> system;
  private final Node node;
  private final Map<String, Repository> repos;
  private final Optional<Repository> rootMirror;
  private final KeyServe keys;
  private final RequestCounts counts;
  private final ArtifactResponses responses;
  private final PublicBase publicBase;
  private final Waiters waiters;
  private final WholeBodies bodies;
  private final Bypass bypass;
  private final ByteBudget budget;
  private final RewrittenMetadata metadata;
  private final GroupServe group;

  ArtifactRoute(ActorSystem<?> system, Node node, Map<String, Repository> repos, KeyServe keys, RequestCounts counts,
      PublicBase publicBase, Waiters waiters, Bypass bypass, ByteBudget budget, RewrittenMetadata metadata) {
    this.system = system;
    this.waiters = waiters;
    this.bypass = bypass;
    this.budget = budget;
    this.metadata = metadata;
    this.bodies = new WholeBodies(node, waiters, system, WHOLE_BODY_LIMIT, budget);
    this.node = node;
    this.repos = Map.copyOf(repos);
    this.rootMirror = repos.values().stream().filter(Repository::rootMirror).findFirst();
    this.keys = keys;
    this.counts = counts;
    this.publicBase = publicBase;
    this.responses = new ArtifactResponses(node.store(), node.hot(), node.io());
    this.group = new GroupServe(system, this.repos, counts, responses, metadata, this::target);
    node.downloads().use(this::source);
  }

  /**
   * The {@link FetchSources} of this node's fetches: the repository's {@link Repository#source},
   * its documents read through the cache on behalf of no client (K1, B1).
   */
  private CompletionStage<FetchSource> source(ArtifactKey key) {
    Repository repo = repos.get(key.repo());
    if (repo == null) {
      return FetchSources.AS_KEYED.of(key);
    }
    CompletionStage<FetchSource> source;
    try {
      source = repo.source(key, new CacheLookup(null));
    } catch (RuntimeException e) {
      source = CompletableFuture.failedFuture(e);
    }
    return source.<FetchSource>thenApply(s -> {
      if (s.unverified()) {
        node.events().fetchUnverified(key.repo());
      }
      return s;
    }).exceptionally(e -> {
      Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      throw t instanceof Lookup.LookupFailed f ? new FetchSources.Unavailable(f.getMessage(), f.status() == 504)
          : new CompletionException(t);
    });
  }

  CompletionStage<HttpResponse> handle(HttpRequest request, String raw, PublicBase.Addresses addresses) {
    boolean api = RegistryApi.under(RequestPath.withoutQuery(raw));
    if (request.method() != HttpMethods.GET && request.method() != HttpMethods.HEAD) {
      return done(counts.count("", "error", api ? RegistryApi.asRegistryError(RegistryApi.readOnly(), raw)
          : text(405, "only GET and HEAD are served")
          .addHeader(RawHeader.create("Allow", "GET, HEAD"))));
    }
    if (api) {
      if (RegistryApi.isRoot(RequestPath.withoutQuery(raw))) {
        return done(RegistryApi.versionCheck());
      }
      return routed(request, apiPath(raw), addresses, true)
          .thenApply(r -> RegistryApi.asRegistryError(r, RequestPath.withoutQuery(raw)).addHeader(RegistryApi.API_VERSION));
    }
    return routed(request, raw, addresses, false);
  }

  /**
   * {@code /v2/NAME/rest} as {@code /NAME/rest}; {@code /v2/<image>/rest} whose first segment names
   * no repository as {@code /ROOT/<image>/rest} when a {@link Repository#rootMirror} is configured.
   */
  private String apiPath(String raw) {
    String unprefixed = RegistryApi.unprefixed(raw);
    return rootMirror.isPresent() && !repos.containsKey(ClientGate.firstSegment(unprefixed))
        ? "/" + rootMirror.get().name() + unprefixed : unprefixed;
  }

  /**
   * The repository a request is for, as client authentication sees it: the first segment of its
   * path; under {@code /v2/} the one after it, or the root mirror's ("" for the version check).
   */
  String repoOf(String raw) {
    String path = RequestPath.withoutQuery(raw);
    return RegistryApi.under(path) && !RegistryApi.isRoot(path) ? ClientGate.firstSegment(apiPath(path))
        : ClientGate.repoOf(raw);
  }

  /** @param api whether the request came under {@code /v2/} (raw is then without that prefix) */
  private CompletionStage<HttpResponse> routed(HttpRequest request, String raw, PublicBase.Addresses addresses,
      boolean api) {
    RequestPath parsed = RequestPath.parse(RequestPath.withoutQuery(raw), true);
    if (parsed instanceof RequestPath.Rejected r) {
      return done(counts.count("", "rejected", text(400, r.reason())));
    }
    RequestPath.Ok ok = (RequestPath.Ok) parsed;
    Repository repo = repos.get(ok.repo());
    if (repo == null) {
      return done(counts.count("", "error", text(404, "unknown repository: " + ok.repo())));
    }
    if (repo.distributionApi() != api) {
      return done(counts.count("", "error", text(404, api ? "not an OCI repository: " + ok.repo()
          : "the OCI repository " + ok.repo() + " is served under /v2/" + ok.repo() + "/")));
    }
    if (!repo.allowsEncodedSlash() && ok.segments().stream().anyMatch(s -> s.indexOf('/') >= 0)) {
      return done(counts.count("", "rejected", text(400, "encoded '/' in a path segment")));
    }
    RepoRequest repoRequest = repoRequest(request, addresses, repo, ok, request.getUri().rawQueryString());
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
            HttpResponse r = text(f.status(), f.getMessage());
            return counts.count(repo.name(), "error", f.status() == 503
                ? r.addHeader(RawHeader.create("Retry-After", String.valueOf(RETRY_AFTER_SECONDS))) : r);
          }
          log.error("resolving {} in {} failed", ok.upstreamPath(), repo.name(), t);
          return counts.count(repo.name(), "error", text(500, "internal error"));
        });
  }

  /**
   * The key a path names, resolved with what this node holds (a cached packument names a
   * tarball's digest); never fetches to find out. Empty when the path names no artifact.
   */
  Optional<ArtifactKey> cachedKey(HttpRequest request, PublicBase.Addresses addresses, Repository repo,
      RequestPath.Ok ok, Optional<String> query) throws Exception {
    Lookup cachedOnly = new CacheLookup(request) {
      @Override
      public CompletionStage<Optional<ByteString>> body(ArtifactKey k, boolean mutable) {
        return CompletableFuture.completedFuture(cached(k));
      }
    };
    Target target = repo.resolve(repoRequest(request, addresses, repo, ok, query), cachedOnly)
        .toCompletableFuture().get(10, TimeUnit.SECONDS);
    return target instanceof Target.Artifact a ? Optional.of(a.key()) : Optional.empty();
  }

  private RepoRequest repoRequest(HttpRequest request, PublicBase.Addresses addresses, Repository repo,
      RequestPath.Ok ok, Optional<String> query) {
    return new RepoRequest(ok.segments(), ok.upstreamPath(), query,
        accept(request), baseUrl(request, addresses) + "/" + repo.name());
  }

  /**
   * The client's {@code Accept}: every such header line joined with {@code ", "}, as RFC 9110
   * allows (Go clients such as podman send one line per media type).
   */
  static Optional<String> accept(HttpRequest request) {
    String joined = null;
    for (HttpHeader h : request.getHeaders()) {
      if (h.is("accept")) {
        joined = joined == null ? h.value() : joined + ", " + h.value();
      }
    }
    return Optional.ofNullable(joined);
  }

  private CompletionStage<HttpResponse> target(HttpRequest request, Repository repo, Target target) {
    if (target instanceof Target.Artifact a) {
      CompletionStage<HttpResponse> served = a.rewrite().isPresent() ? rewritten(request, a)
          : keys.serve(request, a.key(), a.lifetime(), compressible(repo, a)).thenApply(KeyServe.Served::response);
      return a.headers().isEmpty() ? served : served.thenApply(r -> ArtifactResponses.withTargetHeaders(r, a.headers()));
    }
    if (target instanceof Target.Answer a) {
      // An answer made from what Corral holds counts as a hit; a refusal as an error.
      String result = a.status() < 300 ? "hit" : "error";
      return done(counts.count(repo.name(), result, HttpResponse.create().withStatus(StatusCodes.get(a.status()))
          .withEntity(HttpEntities.create(ContentTypes.parse(a.contentType()), a.body()))
          .addHeaders(raw(a.headers()))));
    }
    if (target instanceof Target.Rejected r) {
      return done(counts.count(repo.name(), "rejected", text(400, r.reason())));
    }
    if (target instanceof Target.FirstOf f) {
      return group.firstOf(request, repo, f);
    }
    if (target instanceof Target.Merged m) {
      return group.merged(request, repo, m);
    }
    if (target instanceof Target.Unavailable u) {
      HttpResponse r = text(u.status(), u.reason());
      return done(counts.count(repo.name(), "error", u.status() == 503
          ? r.addHeader(RawHeader.create("Retry-After", String.valueOf(RETRY_AFTER_SECONDS))) : r));
    }
    return done(counts.count(repo.name(), "error", text(404, ((Target.NotFound) target).reason())));
  }

  /**
   * Whether a key is metadata that may be sent gzip-encoded (see {@link ArtifactResponses}): a
   * rewritten body (npm packuments, PyPI pages) or mutable metadata (maven-metadata.xml, Go's
   * {@code @v/list} and {@code @latest}), except the OCI distribution API's (manifests and tag
   * lists go to image clients as they are). Artifacts never are: they are compressed already,
   * and their bytes are what clients verify.
   */
  static boolean compressible(Repository repo, Target.Artifact a) {
    return a.rewrite().isPresent() || (a.mutable() && !repo.distributionApi());
  }

  /**
   * A metadata body served rewritten: rewriting happens when a body is served, never in what is
   * stored. The stored body is rewritten once per stored version and rewrite inputs, shared by
   * every request ({@link RewrittenMetadata}, bounded by the node's {@link ByteBudget}); a miss
   * waits for its fetch to be stored first, in bounded memory. Conditional requests and ranges are
   * answered against the rewritten bytes, whose ETag is their own hash; a client that takes gzip
   * gets the rewritten bytes' gzip form, made once beside them. When the budget has no room
   * within its wait: 503 with {@code Retry-After}.
   */
  private CompletionStage<HttpResponse> rewritten(HttpRequest request, Target.Artifact a) {
    String repo = a.key().repo();
    Optional<StoredArtifact> fresh = node.store().lookup(a.key())
        .filter(s -> !a.mutable() || node.policy(repo).isFresh(s, node.clock().millis()));
    if (fresh.isPresent()) {
      return fromStored(request, a, fresh.get(), Via.HIT, List.of())
          .thenApply(r -> counts.count(repo, Via.HIT, r))
          .exceptionally(e -> unavailable(repo, e, true));
    }
    HttpRequest whole = withoutHeaders(request, "Range", "If-Range", "If-None-Match", "If-Modified-Since");
    Materializer mat = Materializer.matFromSystem(system);
    return keys.serve(whole, a.key(), a.mutable()).thenCompose(served -> {
      HttpResponse r = served.response();
      if (r.status().intValue() != 200) {
        return done(r);
      }
      List<HttpHeader> said = new ArrayList<>(); // what the serve path said of staleness
      for (HttpHeader h : r.getHeaders()) {
        if (h.lowercaseName().startsWith("x-corral-") || h.lowercaseName().equals("warning")) {
          said.add(h);
        }
      }
      Via via = served.via();
      ResponseEntity entity = r.entity();
      if (via == null) { // a bypassed fetch: the body is not stored, read it here under the budget
        long length = entity.getContentLengthOption().orElse(WHOLE_BODY_LIMIT);
        return budget.acquire(length).thenCompose(permit ->
            entity.toStrict(WHOLE_BODY_WAIT.toMillis(), WHOLE_BODY_LIMIT, mat)
                .whenComplete((x, e) -> permit.close())
                .thenCompose(strict -> metadata.rewritten(strict.getData(), a.rewrite().get()))
                .thenCompose(rw -> respond(request, a, Via.BYPASS, headersOf(r), entity.getContentType().toString(),
                    rw, said)))
            .exceptionally(e -> unavailable(repo, e, false));
      }
      // Wait until the fetch is stored (a streaming body drained from its file, in bounded
      // memory); a copy already stored needs no reading here.
      CompletionStage<?> settled;
      if (entity.isStrict()) {
        settled = CompletableFuture.completedFuture(null);
      } else if ((via == Via.HIT || via == Via.STALE) && node.store().lookup(a.key()).isPresent()) {
        // Served from this node's store. A STALE copy relayed from the key's entity on another
        // node is not stored here yet: it is still being copied, and is drained like a miss.
        entity.getDataBytes().runWith(Sink.cancelled(), mat);
        settled = CompletableFuture.completedFuture(null);
      } else {
        settled = r.discardEntityBytes(mat).completionStage();
      }
      return settled.thenCompose(x -> {
        Optional<StoredArtifact> stored = node.store().lookup(a.key());
        if (stored.isPresent()) {
          return fromStored(request, a, stored.get(), via, said);
        }
        if (entity instanceof HttpEntity.Strict strict) { // held in memory already
          return metadata.rewritten(strict.getData(), a.rewrite().get())
              .thenCompose(rw -> respond(request, a, via, List.of(), entity.getContentType().toString(), rw, said));
        }
        return CompletableFuture.completedFuture(text(502, "the fetched body was not kept"));
      }).exceptionally(e -> unavailable(repo, e, false));
    });
  }

  private static List<Header> headersOf(HttpResponse r) {
    List<Header> out = new ArrayList<>();
    for (HttpHeader h : r.getHeaders()) {
      out.add(new Header(h.name(), h.value()));
    }
    return out;
  }

  private CompletionStage<HttpResponse> fromStored(HttpRequest request, Target.Artifact a, StoredArtifact stored,
      Via via, List<HttpHeader> said) {
    BodyRewrite rewrite = a.rewrite().get();
    return metadata.rewritten(stored, rewrite.inputs(), rewrite).thenCompose(rw -> respond(request, a, via,
        stored.headers(), ArtifactResponses.contentType(stored.headers()).toString(), rw, said));
  }

  private CompletionStage<HttpResponse> respond(HttpRequest request, Target.Artifact a, Via via, List<Header> upstream,
      String contentType, RewrittenMetadata.Rewritten rw, List<HttpHeader> said) {
    List<Header> headers = new ArrayList<>();
    headers.add(new Header("Content-Type", contentType));
    headers.add(new Header("ETag", rw.etag()));
    for (Header h : upstream) {
      String n = h.name().toLowerCase(java.util.Locale.ROOT);
      if (n.equals("last-modified") || n.equals("cache-control") || n.equals("expires")) {
        headers.add(h);
      }
    }
    String digest = rw.etag().substring(1, rw.etag().length() - 1); // the rewritten bytes' hash
    return responses.metadata(request, via, headers, rw.body(), digest, metadata).thenApply(r -> r.addHeaders(said));
  }

  /**
   * A rewrite that failed: 503 with {@code Retry-After} when the budget had no room, else 502.
   * Counted as a request only when the serve path has not counted it already.
   */
  private HttpResponse unavailable(String repo, Throwable e, boolean count) {
    Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    HttpResponse r;
    if (t instanceof ByteBudget.Exhausted) {
      counts.shed(repo);
      r = text(503, "too much metadata in memory right now, try again shortly")
          .addHeader(RawHeader.create("Retry-After", String.valueOf(RETRY_AFTER_SECONDS)));
    } else {
      log.warn("rewriting metadata of {} failed: {}", repo, t.toString());
      r = text(502, "stored bytes of this artifact are missing or corrupt");
    }
    return count ? counts.count(repo, "error", r) : r;
  }

  /** Reads other keys for a repository's {@link Repository#resolve}, on behalf of the same client. */
  private class CacheLookup implements Lookup {
    private final HttpRequest client;

    /** @param client the request the reads are for; null for a fetch's own reads (no client to hang up) */
    CacheLookup(HttpRequest client) {
      this.client = client;
    }

    @Override
    public CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
      // The client hanging up cancels the read too.
      Optional<ConnectionScope> scope = client == null ? Optional.empty() : client.getAttribute(ConnectionScope.KEY);
      long token = scope.isPresent() ? scope.get().reserve() : waiters.cancels().reserve();
      return bodies.read(key, mutable, token)
          .whenComplete((r, e) -> scope.ifPresent(sc -> sc.done(token)))
          .thenCompose(read -> {
            if (read instanceof WholeBodies.Read.Bytes b) {
              return CompletableFuture.completedFuture(Optional.of(b.bytes()));
            }
            if (read instanceof WholeBodies.Read.Missing) {
              return CompletableFuture.completedFuture(Optional.<ByteString>empty());
            }
            if (read instanceof WholeBodies.Read.Shed shed) {
              counts.shed(key.repo());
              return CompletableFuture.failedFuture(new Lookup.LookupFailed(503,
                  "could not read " + withoutQuery(key.url()) + " now (" + shed.reason() + ")"));
            }
            if (read instanceof WholeBodies.Read.TimedOut && node.policy(key.repo()).bypassOnBudget()) {
              return bypassed(key);
            }
            boolean timeout = read instanceof WholeBodies.Read.TimedOut
                || (read instanceof WholeBodies.Read.Failed f && f.cause() == Failure.UPSTREAM_TIMEOUT);
            String why = read instanceof WholeBodies.Read.Failed f ? f.reason() : "timed out waiting for the upstream";
            return CompletableFuture.failedFuture(new Lookup.LookupFailed(timeout ? 504 : 502,
                "could not read " + withoutQuery(key.url()) + " (" + why + ")"));
          });
    }

    /** The budget ran out and the repository allows it: the document read once, uncached. */
    private CompletionStage<Optional<ByteString>> bypassed(ArtifactKey key) {
      return bypass.lookup(key).thenCompose(r -> {
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
            "could not read " + withoutQuery(key.url()) + " (" + status + ")"));
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
      if (stored.get().size() > WHOLE_BODY_LIMIT) {
        return Optional.empty();
      }
      // Called while resolving, so it cannot wait for room: no room now is a 503.
      Optional<ByteBudget.Permit> permit = budget.tryAcquire(stored.get().size());
      if (permit.isEmpty()) {
        counts.shed(key.repo());
        throw new Lookup.LookupFailed(503, "too much metadata in memory right now to read " + withoutQuery(key.url()));
      }
      try (ByteBudget.Permit held = permit.get()) {
        return Optional.of(node.store().readAll(stored.get()));
      } catch (IOException e) {
        return Optional.empty();
      }
    }

    @Override
    public Optional<String> cachedDigest(ArtifactKey key) {
      return node.store().lookup(key).map(StoredArtifact::sha256);
    }
  }

  /** The base URL clients reach this node at (see {@link PublicBase}). */
  private String baseUrl(HttpRequest request, PublicBase.Addresses addresses) {
    PublicBase.Addresses a = addresses == null ? new PublicBase.Addresses(null, null) : addresses;
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    Optional<String> host = request.getHeader("x-forwarded-host").map(HttpHeader::value)
        .or(() -> request.getHeader("host").map(HttpHeader::value));
    return publicBase.of(a.local(), a.remote(), request.getHeader("x-forwarded-proto").map(HttpHeader::value), host);
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

  /** An upstream URL as shown to a client: its query may carry a pre-signed URL's signature. */
  private static String withoutQuery(String url) {
    int q = url.indexOf('?');
    return q < 0 ? url : url.substring(0, q) + "?...";
  }
}
