package dev.corral.registry.npm;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;

/**
 * An npm registry ({@code --repo NAME=npm:URL}, URL the registry root; clients use
 * {@code npm --registry <corral>/NAME/}).
 *
 * <ul>
 *   <li>{@code /NAME/<pkg>}, {@code /NAME/@scope/<pkg>}, {@code /NAME/@scope%2f<pkg>}: the
 *       packument, mutable, in two variants chosen by the client's {@code Accept}:
 *       {@value #ABBREVIATED} when the client prefers it, else {@value #FULL}. Upstream URL
 *       {@code <root>/<pkg>} ({@code <root>/@scope%2F<pkg>} for scoped names, as the HTTP client sends it). Served with
 *       {@code Vary: Accept} and every {@code versions.*.dist.tarball} rewritten to Corral's URL.
 *   <li>{@code /NAME/<pkg>/-/<file>.tgz} (scoped: {@code /NAME/@scope/<pkg>/-/<file>.tgz}): the
 *       tarball, immutable. Its key is {@code <root>/<pkg>/-/<file>} on every node, never a
 *       digest (K1); the fetch, wherever it runs, reads the packument through the cache for the
 *       upstream URL and the digest that verifies the bytes ({@link #source}).
 *   <li>Anything else (search, {@code /-/} endpoints, version documents): 404.
 * </ul>
 */
public final class NpmRepository implements Repository {
  /** The variant (and upstream {@code Accept}) of the full packument. */
  public static final String FULL = "application/json";
  /** The variant (and upstream {@code Accept}) of the abbreviated ("corgi") packument. */
  public static final String ABBREVIATED = "application/vnd.npm.install-v1+json";

  private static final List<Header> VARY = List.of(new Header("Vary", "Accept"));
  /** One part of a package name (the scope without its {@code @}, or the name). */
  private static final Pattern PART = Pattern.compile("[A-Za-z0-9_~!*'()-][A-Za-z0-9._~!*'()-]*");

  private final String name;
  private final String root;
  /** Every tarball request reads its packument's tarballs; parsed once per packument body. */
  private final ParsedBodies<NpmPackument.Tarball> parsed = new ParsedBodies<>(200_000);

  public NpmRepository(String name, String url) {
    this.name = name;
    this.root = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "npm";
  }

  @Override
  public String upstream() {
    return root;
  }

  @Override
  public boolean allowsEncodedSlash() {
    return true;
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    return CompletableFuture.completedFuture(target(request, lookup));
  }

  private Target target(RepoRequest request, Lookup lookup) {
    List<String> s = request.segments();
    if (s.get(0).equals("-")) {
      return new Target.NotFound("npm registry endpoints under /-/ (search, audit, ping) are not served by Corral");
    }
    // The package name: "@scope/name" arrives as two segments, or as one with an encoded slash.
    String pkg;
    int next;
    if (s.get(0).startsWith("@")) {
      if (s.get(0).indexOf('/') >= 0) {
        pkg = s.get(0);
        next = 1;
      } else if (s.size() >= 2) {
        pkg = s.get(0) + "/" + s.get(1);
        next = 2;
      } else {
        return new Target.NotFound("a scope without a package name");
      }
    } else {
      pkg = s.get(0);
      next = 1;
    }
    for (int i = next; i < s.size(); i++) {
      if (s.get(i).indexOf('/') >= 0) {
        return new Target.Rejected("encoded '/' is allowed only in a scoped package name");
      }
    }
    if (!isPackageName(pkg)) {
      return new Target.Rejected("not an npm package name: " + pkg);
    }
    int rest = s.size() - next;
    if (rest == 0) {
      return packument(pkg, request);
    }
    if (rest == 2 && s.get(next).equals("-")) {
      String file = s.get(next + 1);
      if (!NpmPackument.isTarballFile(file)) {
        return new Target.NotFound("not an npm tarball name: " + file);
      }
      return tarball(pkg, file);
    }
    return new Target.NotFound("npm: only packuments and tarballs are served");
  }

  /** {@code name} or {@code @scope/name}, each part URL-safe, at most 214 characters. */
  static boolean isPackageName(String pkg) {
    if (pkg.length() > 214) {
      return false;
    }
    if (pkg.startsWith("@")) {
      int slash = pkg.indexOf('/');
      return slash > 1 && PART.matcher(pkg.substring(1, slash)).matches()
          && PART.matcher(pkg.substring(slash + 1)).matches();
    }
    return PART.matcher(pkg).matches();
  }

  /** The variant a client's {@code Accept} asks for. */
  static String variant(Optional<String> accept) {
    double abbreviated = AcceptHeader.quality(accept, ABBREVIATED);
    double full = AcceptHeader.quality(accept, FULL);
    // The registry answers the abbreviated form only when asked for it by name.
    boolean named = accept.isPresent() && accept.get().toLowerCase(java.util.Locale.ROOT).contains(ABBREVIATED);
    return named && abbreviated > 0 && abbreviated >= full ? ABBREVIATED : FULL;
  }

  /** The upstream URL of a packument: scoped names with the slash encoded, as npm sends them. */
  String packumentUrl(String pkg) {
    return root + "/" + (pkg.startsWith("@") ? PathSegment.encode(pkg.substring(0, pkg.indexOf('/')))
        + "%2F" + PathSegment.encode(pkg.substring(pkg.indexOf('/') + 1)) : PathSegment.encode(pkg));
  }

  ArtifactKey packumentKey(String pkg, String variant) {
    return new ArtifactKey(name, packumentUrl(pkg), variant, null);
  }

  private Target packument(String pkg, RepoRequest request) {
    ArtifactKey key = packumentKey(pkg, variant(request.accept()));
    String base = request.baseUrl();
    BodyRewrite rewrite = BodyRewrite.keyed(pkg + '\n' + base, body -> NpmPackument.rewrite(body, pkg, base));
    return new Target.Artifact(key, true, Optional.of(rewrite), VARY);
  }

  /**
   * The tarball's key: its canonical upstream URL, on every node, whatever that node holds (K1).
   * Where its bytes come from and what they must hash to is the fetch's business ({@link #source}).
   */
  ArtifactKey tarballKey(String pkg, String file) {
    return ArtifactKey.of(name, root + "/" + encodedPath(pkg) + "/-/" + PathSegment.encode(file));
  }

  private Target tarball(String pkg, String file) {
    return Target.Artifact.immutable(tarballKey(pkg, file));
  }

  /**
   * A tarball's upstream URL and expected digest, from its package's packument read through the
   * cache ({@link Lookup#body}: coalesced cluster-wide, fresh within the metadata TTL, a stale
   * copy when the upstream errs): the URL and the strongest digest the packument names for the
   * file (B1). The variant read is the one clients ask for, as far as this node knows: the one it
   * holds (full first), else the full one (what npm asks for); both name the same integrity for a
   * published version, and neither choice touches the key. A packument the upstream does not
   * have, or one that does not name the file: the canonical URL, unverified (as a tarball asked
   * before its packument always was). A packument that cannot be read (the upstream errs or times
   * out and no copy is held): the lookup's failure, so the fetch fails and nothing is stored.
   * Every other key: as keyed.
   */
  @Override
  public CompletionStage<FetchSource> source(ArtifactKey key, Lookup lookup) {
    Optional<String[]> tarball = tarballOf(key);
    if (tarball.isEmpty()) {
      return FetchSources.AS_KEYED.of(key);
    }
    String pkg = tarball.get()[0];
    String file = tarball.get()[1];
    ArtifactKey packument = lookup.cachedDigest(packumentKey(pkg, FULL)).isEmpty()
        && lookup.cachedDigest(packumentKey(pkg, ABBREVIATED)).isPresent()
        ? packumentKey(pkg, ABBREVIATED) : packumentKey(pkg, FULL);
    return lookup.body(packument, true).thenApply(body -> body
        .map(b -> parsed.get(packument, b, d -> NpmPackument.tarballs(d, pkg)).get(file))
        .map(t -> new FetchSource(t.url(), t.expected().orElse(null)))
        .orElseGet(() -> new FetchSource(key.url(), null)));
  }

  /** The package and file of a tarball key ({@link #tarballKey}); empty for any other key. */
  Optional<String[]> tarballOf(ArtifactKey key) {
    String prefix = root + "/";
    if (!key.repo().equals(name) || !key.variant().isEmpty() || key.expected() != null
        || !key.url().startsWith(prefix)) {
      return Optional.empty();
    }
    String path = key.url().substring(prefix.length());
    int dash = path.lastIndexOf("/-/");
    if (dash <= 0) {
      return Optional.empty();
    }
    List<String> parts = new ArrayList<>();
    for (String raw : path.substring(0, dash).split("/", -1)) {
      Optional<String> part = PathSegment.decode(raw);
      if (part.isEmpty()) {
        return Optional.empty();
      }
      parts.add(part.get());
    }
    String pkg = String.join("/", parts);
    Optional<String> file = PathSegment.decode(path.substring(dash + 3));
    if (!isPackageName(pkg) || file.isEmpty() || !NpmPackument.isTarballFile(file.get())
        || !tarballKey(pkg, file.get()).equals(key)) {
      return Optional.empty();
    }
    return Optional.of(new String[] {pkg, file.get()});
  }

  /** {@code name} or {@code @scope/name} with each part encoded and a real slash between. */
  static String encodedPath(String pkg) {
    List<String> parts = new ArrayList<>();
    for (String p : pkg.split("/", -1)) {
      parts.add(PathSegment.encode(p));
    }
    return String.join("/", parts);
  }
}
