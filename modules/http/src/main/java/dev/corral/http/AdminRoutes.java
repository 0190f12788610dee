package dev.corral.http;

import static dev.corral.http.Answers.text;

import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.Node;
import dev.corral.core.key.ArtifactKey;
import dev.corral.http.auth.PresentedSecret;
import dev.corral.http.metrics.Metrics;
import dev.corral.registry.Repository;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
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
 * {@value #AUDIT} logger). The internal peer endpoint is not here: it has a port of its own (cluster
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
  }

  HttpResponse handle(HttpRequest request, String raw, PublicBase.Addresses addresses) {
    String path = RequestPath.withoutQuery(raw);
    boolean get = request.method() == HttpMethods.GET || request.method() == HttpMethods.HEAD;
    if (get && path.equals("/-/health/live")) {
      return text(200, "live");
    }
    if (get && path.equals("/-/health/ready")) {
      return ready.getAsBoolean() ? text(200, "ready") : text(503, "not ready");
    }
    if (get && path.equals("/-/metrics")) {
      if (metricsNeedAdminToken && adminToken.isEmpty()) {
        return text(403, "metrics need the admin token (--admin-token-file) once --tokens-file is set");
      }
      if (metricsNeedAdminToken && !adminTokenPresented(request)) {
        return adminTokenRequired();
      }
      return metrics();
    }
    if (path.startsWith("/-/cache/")) {
      if (request.method() != HttpMethods.DELETE) {
        return text(405, "purge with DELETE").addHeader(RawHeader.create("Allow", "DELETE"));
      }
      return purge(request, addresses, "/" + path.substring("/-/cache/".length()), RequestPath.query(raw));
    }
    return text(404, "no such endpoint");
  }

  private HttpResponse purge(HttpRequest request, PublicBase.Addresses addresses, String repoPath, Optional<String> query) {
    if (adminToken.isEmpty()) {
      return text(403, "purge is disabled: no admin token is configured");
    }
    String client = addresses == null || addresses.remote() == null ? "-"
        : addresses.remote().getHostString() + ":" + addresses.remote().getPort();
    if (!adminTokenPresented(request)) {
      audit.info("purge refused: no valid admin token, client={} path={}", client, repoPath);
      return adminTokenRequired();
    }
    RequestPath parsed = RequestPath.parse(repoPath, true);
    if (parsed instanceof RequestPath.Rejected r) {
      return text(400, r.reason());
    }
    RequestPath.Ok ok = (RequestPath.Ok) parsed;
    Repository repo = repos.get(ok.repo());
    if (repo == null) {
      return text(404, "unknown repository: " + ok.repo());
    }
    Optional<ArtifactKey> key;
    try {
      key = artifacts.cachedKey(request, addresses, repo, ok, query);
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
      audit.info("purge failed: by=admin-token client={} key={} error={}", client, key.get(), e.toString());
      return text(500, "purge failed: " + e.getMessage());
    }
    // This node's copy is gone now; the key's record (which lists the holders) is cleared next.
    audit.info("purge by=admin-token client={} key={} copies={}", client, key.get(), held ? 1 : 0);
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

  private boolean adminTokenPresented(HttpRequest request) {
    return adminToken.isPresent() && PresentedSecret.bearer(request.getHeader("Authorization").map(h -> h.value()))
        .map(given -> PresentedSecret.matches(given, adminToken.get())).orElse(false);
  }

  private static HttpResponse adminTokenRequired() {
    return text(401, "a valid admin bearer token is required").addHeader(RawHeader.create("WWW-Authenticate", "Bearer"));
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
}
