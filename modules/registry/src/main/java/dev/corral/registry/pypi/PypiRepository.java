package dev.corral.registry.pypi;

import dev.corral.core.download.FetchSource;
import dev.corral.core.download.FetchSources;
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
import org.apache.pekko.util.ByteString;

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
 *       the file the project's page names, immutable, keyed {@code <page URL><filename>} on
 *       every node (K1) and verified against the page's hash where it is fetched. The page is
 *       read through the cache (fetched if this node has neither form), so the only URLs Corral
 *       fetches are those the configured upstream's own page named, even on another host. A file
 *       the page does not name is 404.
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
  public String type() {
    return "pypi";
  }

  @Override
  public String upstream() {
    return root;
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

  /**
   * A file's key: {@code <page URL><filename>}, the same on every node whatever page it holds (K1).
   * The page is read here only to answer 404 for a file it does not list; where the bytes really
   * are and what they must hash to is the fetch's business ({@link #source}).
   */
  ArtifactKey fileKey(String normalized, String filename) {
    return ArtifactKey.of(name, pageUrl(normalized) + PathSegment.encode(filename));
  }

  private CompletionStage<Target> file(String project, String filename, Lookup lookup) {
    Optional<String> normalized = normalize(project);
    if (normalized.isEmpty()) {
      return CompletableFuture.completedFuture(new Target.Rejected("not a Python project name: " + project));
    }
    if (!PathSegment.isPlainName(filename)) {
      return CompletableFuture.completedFuture(new Target.Rejected("not a file name: " + filename));
    }
    ArtifactKey page = heldPage(normalized.get(), lookup);
    return lookup.body(page, true).thenApply(body -> {
      if (body.isEmpty()) {
        return new Target.NotFound("no such project upstream: " + normalized.get());
      }
      if (listed(page, body.get(), filename).isPresent()) {
        return Target.Artifact.immutable(fileKey(normalized.get(), filename));
      }
      return new Target.NotFound("the project's page does not list " + filename);
    });
  }

  /**
   * A file's upstream URL and expected {@code sha256}, from its project's page read through the
   * cache (coalesced cluster-wide): the URL the page names, on whatever host, and its hash (B1).
   * The form read is the one this node holds, else JSON; both name the same file and hash, and
   * neither choice touches the key. A page that no longer lists the file, or a project the
   * upstream no longer has, fails the fetch (nothing is fetched that the page did not name).
   * Every other key: as keyed.
   */
  @Override
  public CompletionStage<FetchSource> source(ArtifactKey key, Lookup lookup) {
    Optional<String[]> file = fileOf(key);
    if (file.isEmpty()) {
      return FetchSources.AS_KEYED.of(key);
    }
    ArtifactKey page = heldPage(file.get()[0], lookup);
    String filename = file.get()[1];
    return lookup.body(page, true).thenApply(body -> body
        .flatMap(b -> listed(page, b, filename))
        .orElseThrow(() -> new FetchSources.Unavailable(
            "the project's page no longer lists " + filename, false)));
  }

  /** The project and file name of a file key ({@link #fileKey}); empty for any other key. */
  Optional<String[]> fileOf(ArtifactKey key) {
    if (!key.repo().equals(name) || !key.variant().isEmpty() || key.expected() != null
        || !key.url().startsWith(root)) {
      return Optional.empty();
    }
    String path = key.url().substring(root.length());
    int slash = path.indexOf('/');
    if (slash <= 0) {
      return Optional.empty();
    }
    Optional<String> normalized = normalize(path.substring(0, slash));
    Optional<String> filename = PathSegment.decode(path.substring(slash + 1));
    if (normalized.isEmpty() || filename.isEmpty() || !PathSegment.isPlainName(filename.get())
        || !fileKey(normalized.get(), filename.get()).equals(key)) {
      return Optional.empty();
    }
    return Optional.of(new String[] {normalized.get(), filename.get()});
  }

  /** The form of the project's page this node holds (JSON first), else JSON. */
  private ArtifactKey heldPage(String normalized, Lookup lookup) {
    ArtifactKey json = pageKey(normalized, JSON);
    ArtifactKey html = pageKey(normalized, HTML);
    return lookup.cachedDigest(json).isEmpty() && lookup.cachedDigest(html).isPresent() ? html : json;
  }

  /** Where the page says {@code filename} is and what it hashes to; a {@code .metadata} file too (PEP 658). */
  private Optional<FetchSource> listed(ArtifactKey page, ByteString body, String filename) {
    Map<String, SimpleIndex.File> files = parsed.get(page, body, b -> SimpleIndex.files(b, page.url()));
    SimpleIndex.File f = files.get(filename);
    if (f != null) {
      return Optional.of(new FetchSource(f.url(), f.expected().orElse(null)));
    }
    if (filename.endsWith(METADATA)) {
      SimpleIndex.File of = files.get(filename.substring(0, filename.length() - METADATA.length()));
      if (of != null && of.metadata()) {
        return Optional.of(new FetchSource(of.url() + METADATA, of.metadataExpected().orElse(null)));
      }
    }
    return Optional.empty();
  }
}
