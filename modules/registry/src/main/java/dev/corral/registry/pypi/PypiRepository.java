package dev.corral.registry.pypi;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import dev.corral.registry.AcceptHeader;
import dev.corral.registry.BodyRewrite;
import dev.corral.registry.Lookup;
import dev.corral.registry.ParsedBodies;
import dev.corral.registry.PathSegment;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;

/**
 * A Python simple repository ({@code --repo NAME=pypi:URL}, URL the simple index root
 * {@code .../simple/}; clients use {@code pip --index-url <corral>/NAME/}).
 *
 * <ul>
 *   <li>{@code /NAME/<project>/}: the project's page, upstream {@code <root><normalized>/},
 *       mutable. Any spelling of the name is served under the PEP 503 normalised key (no
 *       redirect). Two variants by content negotiation (PEP 691): {@value #JSON} or
 *       {@value #HTML}; {@code ?format=} overrides {@code Accept}; no preference means HTML. The
 *       upstream's Content-Type is kept, {@code Vary: Accept} added, and every file link
 *       rewritten to {@code <base>/-/files/<project>/<filename>}.
 *   <li>{@code /NAME/-/files/<project>/<filename>} and {@code <filename>.metadata} (PEP 658):
 *       the file the project's page names, immutable, verified against the page's hash. The page
 *       is read through the cache (fetched if this node has neither form), so the only URLs
 *       Corral fetches are those the configured upstream's own page named, even on another host.
 *       A file the page does not name is 404.
 *   <li>Anything else, including the root project list, is 404.
 * </ul>
 */
public final class PypiRepository implements Repository {
  /** The variant (and upstream {@code Accept}) of the PEP 691 JSON page. */
  public static final String JSON = "application/vnd.pypi.simple.v1+json";
  /** The variant (and upstream {@code Accept}) of the HTML page. */
  public static final String HTML = "text/html";

  private static final List<Header> VARY = List.of(new Header("Vary", "Accept"));
  /** PEP 508 project names. */
  private static final Pattern PROJECT = Pattern.compile("[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?");
  private static final Pattern SEPARATORS = Pattern.compile("[-_.]+");
  private static final String METADATA = ".metadata";

  private final String name;
  private final String root;
  /** Every file request reads its project's page; parsed once per page body. */
  private final ParsedBodies<SimpleIndex.File> parsed = new ParsedBodies<>(200_000);

  public PypiRepository(String name, String url) {
    this.name = name;
    this.root = url.endsWith("/") ? url : url + "/";
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    List<String> s = request.segments();
    if (s.size() == 1 && !s.get(0).equals("-")) {
      return CompletableFuture.completedFuture(page(s.get(0), request));
    }
    if (s.size() == 4 && s.get(0).equals("-") && s.get(1).equals("files")) {
      return file(s.get(2), s.get(3), lookup);
    }
    return CompletableFuture.completedFuture(
        new Target.NotFound("pypi: only /<project>/ pages and the files they name are served"));
  }

  /** PEP 503 normalisation; empty when the name is not a valid project name. */
  static Optional<String> normalize(String project) {
    if (project.length() > 200 || !PROJECT.matcher(project).matches()) {
      return Optional.empty();
    }
    return Optional.of(SEPARATORS.matcher(project).replaceAll("-").toLowerCase(Locale.ROOT));
  }

  /** The variant a client asks for: {@code ?format=} if given, else its {@code Accept}. */
  static String variant(Optional<String> accept, Optional<String> rawQuery) {
    Optional<String> format = rawQuery.flatMap(PypiRepository::formatParameter);
    Optional<String> asked = format.isPresent() ? format : accept;
    double json = Math.max(AcceptHeader.quality(asked, JSON),
        AcceptHeader.quality(asked, "application/vnd.pypi.simple.latest+json"));
    double html = Math.max(Math.max(AcceptHeader.quality(asked, "application/vnd.pypi.simple.v1+html"),
        AcceptHeader.quality(asked, "application/vnd.pypi.simple.latest+html")), AcceptHeader.quality(asked, HTML));
    boolean named = asked.isPresent() && asked.get().toLowerCase(Locale.ROOT).contains("+json");
    return named && json > 0 && json >= html ? JSON : HTML;
  }

  private static Optional<String> formatParameter(String query) {
    for (String pair : query.split("&")) {
      if (pair.startsWith("format=")) {
        return PathSegment.decode(pair.substring("format=".length()).replace('+', ' '));
      }
    }
    return Optional.empty();
  }

  String pageUrl(String normalized) {
    return root + normalized + "/";
  }

  ArtifactKey pageKey(String normalized, String variant) {
    return new ArtifactKey(name, pageUrl(normalized), variant, null);
  }

  private Target page(String project, RepoRequest request) {
    Optional<String> normalized = normalize(project);
    if (normalized.isEmpty()) {
      return new Target.Rejected("not a Python project name: " + project);
    }
    ArtifactKey key = pageKey(normalized.get(), variant(request.accept(), request.rawQuery()));
    String filesBase = request.baseUrl() + "/-/files/" + normalized.get();
    BodyRewrite rewrite = BodyRewrite.keyed(filesBase, body -> SimpleIndex.rewrite(body, filesBase));
    return new Target.Artifact(key, true, Optional.of(rewrite), VARY);
  }

  private CompletionStage<Target> file(String project, String filename, Lookup lookup) {
    Optional<String> normalized = normalize(project);
    if (normalized.isEmpty()) {
      return CompletableFuture.completedFuture(new Target.Rejected("not a Python project name: " + project));
    }
    if (!PathSegment.isPlainName(filename)) {
      return CompletableFuture.completedFuture(new Target.Rejected("not a file name: " + filename));
    }
    // Read the form this node already holds, so that a file request never fetches a second form.
    ArtifactKey json = pageKey(normalized.get(), JSON);
    ArtifactKey html = pageKey(normalized.get(), HTML);
    ArtifactKey page = lookup.cachedDigest(json).isPresent() ? json
        : lookup.cachedDigest(html).isPresent() ? html : json;
    return lookup.body(page, true).thenApply(body -> {
      if (body.isEmpty()) {
        return new Target.NotFound("no such project upstream: " + normalized.get());
      }
      Map<String, SimpleIndex.File> files = parsed.get(page, body.get(), b -> SimpleIndex.files(b, page.url()));
      SimpleIndex.File f = files.get(filename);
      if (f != null) {
        return Target.Artifact.immutable(new ArtifactKey(name, f.url(), "", f.expected().orElse(null)));
      }
      if (filename.endsWith(METADATA)) {
        SimpleIndex.File of = files.get(filename.substring(0, filename.length() - METADATA.length()));
        if (of != null && of.metadata()) {
          return Target.Artifact.immutable(
              new ArtifactKey(name, of.url() + METADATA, "", of.metadataExpected().orElse(null)));
        }
      }
      return new Target.NotFound("the project's page does not list " + filename);
    });
  }
}
