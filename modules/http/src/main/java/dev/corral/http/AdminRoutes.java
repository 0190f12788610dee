package dev.corral.http;

import static dev.corral.http.Answers.text;

import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.Node;
import dev.corral.core.key.ArtifactKey;
import dev.corral.http.auth.PresentedSecret;
import dev.corral.http.metrics.Metrics;
import dev.corral.http.upstream.QuerylessUrl;
import dev.corral.registry.Repository;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BooleanSupplier;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@code /-/} endpoints: health (live, ready; always open), metrics (open, or with the admin
 * token once client authentication is on), purge (with the admin token; each one written to the
 * {@value #AUDIT} logger), the listings of {@link AdminListings} and the cluster view of
 * {@link AdminCluster} (with the admin token). The internal peer endpoint is not here: it has a port of its own (cluster
 * module, {@code PeerPort}), so {@code /-/peer/} on the client port is 404.
 */
final class AdminRoutes {
  private static final Logger log = LoggerFactory.getLogger(AdminRoutes.class);
  static final String AUDIT = "corral.audit";
  private static final Logger audit = LoggerFactory.getLogger(AUDIT);

  private final ActorSystem<?> system;
  private final Node node;
  private final Metrics metrics;
  private final Map<String, Repository> repos;
  private final Optional<String> adminToken;
  private final ArtifactRoute artifacts;
  private final BooleanSupplier ready;
  private final boolean metricsNeedAdminToken;
  private final AdminListings listings;
  private final AdminCluster cluster;
  private final PrefixPurge prefixPurge;

  AdminRoutes(ActorSystem<?> system, Node node, Metrics metrics, Map<String, Repository> repos,
      Optional<String> adminToken, ArtifactRoute artifacts, BooleanSupplier ready, boolean metricsNeedAdminToken) {
    this.metricsNeedAdminToken = metricsNeedAdminToken;
    this.system = system;
    this.node = node;
    this.metrics = metrics;
    this.repos = Map.copyOf(repos);
    this.adminToken = adminToken;
    this.artifacts = artifacts;
    this.ready = ready;
    this.listings = new AdminListings(repos, node.store(), node.clock(), node.records(), node.peers());
    this.cluster = new AdminCluster(system);
    this.prefixPurge = new PrefixPurge(system, node);
  }

  CompletionStage<HttpResponse> handle(HttpRequest request, String raw, PublicBase.Addresses addresses) {
    String path = RequestPath.withoutQuery(raw);
    if (path.equals("/-/admin/cluster") && (request.method() == HttpMethods.GET || request.method() == HttpMethods.HEAD)) {
      if (adminToken.isEmpty()) {
        return done(text(403, "the admin API is disabled: no admin token is configured (--admin-token-file)"));
      }
      return adminTokenPresented(request) ? cluster.view() : done(adminTokenRequired());
    }
    if (path.equals("/-/admin/cache")) {
      if (request.method() != HttpMethods.DELETE) {
        return done(text(405, "purge with DELETE").addHeader(RawHeader.create("Allow", "DELETE")));
      }
      return purgePrefix(request, addresses);
    }
    if (path.startsWith("/-/cache/")) {
      if (request.method() != HttpMethods.DELETE) {
        return done(text(405, "purge with DELETE").addHeader(RawHeader.create("Allow", "DELETE")));
      }
      String repoPath = "/" + path.substring("/-/cache/".length());
      // An OCI artifact may be named as its clients name it, /v2/NAME/...
      return purge(request, addresses, RegistryApi.under(repoPath) ? RegistryApi.unprefixed(repoPath) : repoPath,
          RequestPath.query(raw));
    }
    boolean get = request.method() == HttpMethods.GET || request.method() == HttpMethods.HEAD;
    if (get && path.equals("/-/metrics")) {
      if (metricsNeedAdminToken && adminToken.isEmpty()) {
        return done(text(403, "metrics need the admin token (--admin-token-file) once --tokens-file is set"));
      }
      if (metricsNeedAdminToken && !adminTokenPresented(request)) {
        return done(adminTokenRequired());
      }
      return metrics.scrape().thenApply(AdminRoutes::metricsText);
    }
    if (get && (path.equals("/-/admin/repos") || path.equals("/-/admin/keys"))) {
      if (adminToken.isEmpty()) {
        return done(text(403, "the admin API is disabled: no admin token is configured (--admin-token-file)"));
      }
      if (!adminTokenPresented(request)) {
        return done(adminTokenRequired());
      }
      if (path.equals("/-/admin/repos")) {
        return done(listings.repos());
      }
      var query = request.getUri().query();
      return listings.keys(query.get("repo"), query.get("prefix"), query.get("limit"), query.get("after"));
    }
    return done(handleAtOnce(request, path));
  }

  private static CompletionStage<HttpResponse> done(HttpResponse r) {
    return CompletableFuture.completedFuture(r);
  }

  private HttpResponse handleAtOnce(HttpRequest request, String path) {
    boolean get = request.method() == HttpMethods.GET || request.method() == HttpMethods.HEAD;
    if (get && path.equals("/-/health/live")) {
      return text(200, "live");
    }
    if (get && path.equals("/-/health/ready")) {
      return ready.getAsBoolean() ? text(200, "ready") : text(503, "not ready");
    }
    return text(404, "no such endpoint");
  }

  /**
   * Purges the key cluster-wide: this node's copy is removed here, then the key's entity
   * ({@link FetchEntity.PurgeAll}) tombstones the record and tells every other holder to delete
   * its copy. 200 with {@code {"copies","unreachable","fetchRunning"}} when a copy went (or a
   * fetch runs), 404 when nothing was held, 503 when the record could not be reached (this node's
   * copy is gone all the same; the tombstone is written when the database answers).
   */
  private CompletionStage<HttpResponse> purge(HttpRequest request, PublicBase.Addresses addresses, String repoPath,
      Optional<String> query) {
    if (adminToken.isEmpty()) {
      return done(text(403, "purge is disabled: no admin token is configured"));
    }
    String client = addresses == null || addresses.remote() == null ? "-"
        : addresses.remote().getHostString() + ":" + addresses.remote().getPort();
    if (!adminTokenPresented(request)) {
      audit.info("purge refused: no valid admin token, client={} path={}", client, repoPath);
      return done(adminTokenRequired());
    }
    RequestPath parsed = RequestPath.parse(repoPath, true);
    if (parsed instanceof RequestPath.Rejected r) {
      return done(text(400, r.reason()));
    }
    RequestPath.Ok ok = (RequestPath.Ok) parsed;
    Repository repo = repos.get(ok.repo());
    if (repo == null) {
      return done(text(404, "unknown repository: " + ok.repo()));
    }
    if (repo.type().equals("group")) {
      return done(text(404, ok.repo() + " is a group and holds no keys of its own: purge through the member"
          + " that holds the artifact (" + repo.upstream() + ")"));
    }
    Optional<ArtifactKey> found;
    try {
      found = artifacts.cachedKey(request, addresses, repo, ok, query);
    } catch (Exception e) {
      return done(text(500, "purge failed: " + e.getMessage()));
    }
    if (found.isEmpty()) {
      return done(text(404, "no artifact at this path"));
    }
    ArtifactKey key = found.get();
    boolean held;
    try {
      held = node.store().remove(key);
    } catch (IOException e) {
      audit.info("purge failed: by=admin-token client={} key={} error={}", client, key, e.toString());
      return done(text(500, "purge failed: " + e.getMessage()));
    }
    int here = held ? 1 : 0;
    // This node's copy is gone now; the key's entity clears the record and the other holders.
    String self = node.peers().self().orElse(null);
    return ClusterSharding.get(system)
        .entityRefFor(FetchEntity.TYPE_KEY, key.id())
        .<FetchEntity.Purged>ask(replyTo -> new FetchEntity.PurgeAll(self, replyTo), PURGE_TIMEOUT)
        .handle((purged, e) -> {
          if (e != null || !purged.recordRead()) {
            String why = e != null ? e.toString() : "the record could not be read";
            log.warn("purge of {} reached this node's store but not the key's record: {}", key, why);
            audit.info("purge by=admin-token client={} key={} copies={} record=unreachable", client, key, here);
            return json(503, here, 0, purged != null && purged.fetchRunning(),
                "the key's record could not be reached: other nodes' copies were not purged");
          }
          int copies = here + purged.copies();
          audit.info("purge by=admin-token client={} key={} copies={} unreachable={} fetchRunning={}", client, key,
              copies, purged.unreachable(), purged.fetchRunning());
          if (copies == 0 && purged.unreachable() == 0 && !purged.fetchRunning()) {
            return json(404, 0, 0, false, "not cached");
          }
          return json(200, copies, purged.unreachable(), purged.fetchRunning(), null);
        });
  }

  /**
   * Purges every key of {@code repo=} whose upstream URL starts with {@code prefix=} (the whole URL,
   * or the path after the repository's upstream URL; {@code prefix=/} is the whole repository) on
   * every node: {@link PrefixPurge}.
   */
  private CompletionStage<HttpResponse> purgePrefix(HttpRequest request, PublicBase.Addresses addresses) {
    if (adminToken.isEmpty()) {
      return done(text(403, "purge is disabled: no admin token is configured"));
    }
    String client = addresses == null || addresses.remote() == null ? "-"
        : addresses.remote().getHostString() + ":" + addresses.remote().getPort();
    var query = request.getUri().query();
    if (!adminTokenPresented(request)) {
      audit.info("purge refused: no valid admin token, client={} repo={} prefix={}", client,
          query.get("repo").orElse("-"), query.get("prefix").orElse("-"));
      return done(adminTokenRequired());
    }
    Optional<String> repoName = query.get("repo");
    Optional<String> prefix = query.get("prefix");
    if (repoName.isEmpty() || prefix.isEmpty() || prefix.get().isEmpty()) {
      return done(text(400, "purge: repo=NAME and prefix=P are required (prefix=/ purges the whole repository)"));
    }
    Repository repo = repos.get(repoName.get());
    if (repo == null) {
      return done(text(404, "unknown repository: " + repoName.get()));
    }
    if (repo.type().equals("group")) {
      return done(text(400, repo.name() + " is a group and holds no keys of its own: purge each member ("
          + repo.upstream() + ")"));
    }
    dev.corral.core.store.KeyPrefix keys;
    try {
      keys = AdminListings.keyPrefix(repo, prefix.get().equals("/") ? Optional.empty() : prefix);
    } catch (IllegalArgumentException e) {
      return done(text(400, "purge: " + e.getMessage()));
    }
    return prefixPurge.run(keys).thenApply(r -> {
      audit.info("purge by=admin-token client={} repo={} prefix={} keys={} copies={} unreachableNodes={}"
          + " recordsUnreachable={} holdersDown={}", client, keys.repo(), QuerylessUrl.of(keys.urlPrefix()), r.keys(),
          r.copies(), r.unreachableNodes(), r.recordsUnreachable(), r.holdersDown());
      return r.response();
    });
  }

  /** How long a purge waits for the key's entity (which waits for the holders). */
  static final Duration PURGE_TIMEOUT = Duration.ofSeconds(20);

  private static HttpResponse json(int status, int copies, int unreachable, boolean fetchRunning, String error) {
    String body = "{\"copies\":" + copies + ",\"unreachable\":" + unreachable + ",\"fetchRunning\":" + fetchRunning
        + (error == null ? "" : ",\"error\":\"" + error + "\"") + "}\n";
    return HttpResponse.create().withStatus(status)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, body));
  }

  private boolean adminTokenPresented(HttpRequest request) {
    return adminToken.isPresent() && PresentedSecret.bearer(request.getHeader("Authorization").map(h -> h.value()))
        .map(given -> PresentedSecret.matches(given, adminToken.get())).orElse(false);
  }

  private static HttpResponse adminTokenRequired() {
    return text(401, "a valid admin bearer token is required").addHeader(RawHeader.create("WWW-Authenticate", "Bearer"));
  }

  private static HttpResponse metricsText(MetricSnapshots snapshots) {
    try {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      PrometheusTextFormatWriter.create().write(out, snapshots);
      return HttpResponse.create().withEntity(HttpEntities.create(
          ContentTypes.parse("text/plain; version=0.0.4; charset=utf-8"), ByteString.fromArray(out.toByteArray())));
    } catch (IOException e) {
      return text(500, "metrics failed");
    }
  }
}
