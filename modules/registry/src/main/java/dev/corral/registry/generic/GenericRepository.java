package dev.corral.registry.generic;

import dev.corral.core.key.ArtifactKey;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A plain HTTP upstream: {@code /{name}/{path}?{query}} is {@code URL/{path}?{query}}, joined
 * with exactly one {@code /}. The query, as far as the repository's {@link QueryPolicy} keeps
 * it, is part of the upstream URL and so of the key. Bodies are served as stored; how long a
 * stored copy is fresh is decided per path by the repository's {@link FreshnessRules}, else by the
 * upstream's {@code Cache-Control} / {@code Expires} (immutable when it sends neither).
 */
public final class GenericRepository implements Repository {
  private final String name;
  private final String base;
  private final QueryPolicy query;
  private final FreshnessRules freshness;

  public GenericRepository(String name, String url) {
    this(name, url, QueryPolicy.keep());
  }

  public GenericRepository(String name, String url, QueryPolicy query) {
    this(name, url, query, FreshnessRules.NONE);
  }

  public GenericRepository(String name, String url, QueryPolicy query, FreshnessRules freshness) {
    this.name = name;
    this.base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    this.query = query;
    this.freshness = freshness;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "generic";
  }

  @Override
  public String upstream() {
    return base;
  }

  public String baseUrl() {
    return base;
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    String url = base + request.upstreamPath() + query.apply(request.rawQuery()).map(q -> "?" + q).orElse("");
    return CompletableFuture.completedFuture(
        Target.Artifact.file(ArtifactKey.of(name, url), freshness.lifetimeOf(request.path())));
  }
}
