package dev.corral.registry.go;

import dev.corral.core.key.ArtifactKey;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;
import org.apache.pekko.util.ByteString;

/**
 * A Go module proxy (the GOPROXY protocol): {@code /{name}/{module}/@v/list}, {@code /@latest},
 * {@code /@v/{version}.info}, {@code .mod} and {@code .zip}, each {@code URL/{same path}}.
 *
 * <p>Module paths and versions arrive case-encoded ({@code Upper} is {@code !upper}; the go
 * command percent-encodes the {@code !} as {@code %21}, which Corral decodes once). They are
 * checked in that encoded form, sent upstream in that same form (the only one a GOPROXY
 * understands) and keyed by it. A path that is not a valid encoded module path, or a version that
 * is not valid, is rejected with 400.
 *
 * <p>{@code @v/list} and {@code @latest} are mutable; {@code .info} is immutable for a canonical
 * semantic version and mutable for a query such as a branch name; {@code .mod} and {@code .zip}
 * (canonical versions only) are immutable. Upstream 404/410 are passed through as "not found",
 * which the go command reads as "try the next proxy".
 *
 * <p>{@code /{name}/sumdb/{db}/...} proxies a checksum database when one is configured
 * ({@code sumdb-url}; {@code db} must be that URL's {@code host[:port]}, the name the go
 * command knows it by): {@code supported} is answered 200 by Corral, {@code latest} is mutable,
 * {@code lookup/...} and {@code tile/...} immutable. Without one, everything under
 * {@code /sumdb/} is 404, so the go command asks the database directly or uses its
 * {@code GOSUMDB}/{@code GONOSUMDB} settings.
 */
public final class GoRepository implements Repository {
  /** Letters are lower-case in an encoded path ({@code !x} stands for {@code X}). */
  private static final Pattern ENCODED_ELEMENT = Pattern.compile("(?:[a-z0-9._~-]|![a-z])+");
  private static final Pattern FIRST_ELEMENT = Pattern.compile("[a-z0-9.-]+");
  private static final Pattern ENCODED_VERSION = Pattern.compile("(?:[a-z0-9._+~-]|![a-z])+");
  /** A canonical semantic version as the go command writes it (no build metadata but {@code +incompatible}). */
  private static final Pattern CANONICAL = Pattern.compile(
      "v(?:0|[1-9][0-9]*)\\.(?:0|[1-9][0-9]*)\\.(?:0|[1-9][0-9]*)"
          + "(?:-[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?(?:\\+incompatible)?");
  private static final Pattern TILE_SEGMENT = Pattern.compile("[0-9]+|data|x[0-9]{3}|[0-9]{3}(?:\\.p)?");

  private final String name;
  private final String base;
  private final Optional<String> sumdbBase;
  private final Optional<String> sumdbName;

  public GoRepository(String name, String url) {
    this(name, url, Optional.empty());
  }

  /**
   * @param sumdbUrl the checksum database to proxy under {@code /sumdb/{host[:port]}/}, if any
   */
  public GoRepository(String name, String url, Optional<String> sumdbUrl) {
    this.name = name;
    this.base = trimSlash(url);
    this.sumdbBase = sumdbUrl.map(GoRepository::trimSlash);
    this.sumdbName = sumdbUrl.map(u -> URI.create(u).getRawAuthority());
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "go";
  }

  @Override
  public String upstream() {
    return base;
  }

  /** What a path in this repository is. */
  public sealed interface Kind {
    /** Fetch {@code path} (relative to the proxy or checksum database) through the cache. */
    record Fetch(String path, boolean mutable, boolean sumdb) implements Kind {}

    /** The checksum database is proxied: the {@code supported} probe is answered 200. */
    record SumdbSupported() implements Kind {}

    record NotFound(String reason) implements Kind {}

    record Rejected(String reason) implements Kind {}
  }

  /** Classifies the segments after the repository name; pure. */
  public Kind classify(List<String> segments, boolean directory) {
    if (directory) {
      return new Kind.NotFound("directory listings are not served");
    }
    if (segments.get(0).equals("sumdb")) {
      return sumdb(segments);
    }
    int n = segments.size();
    String last = segments.get(n - 1);
    if (last.equals("@latest")) {
      return module(segments.subList(0, n - 1), String.join("/", segments), true);
    }
    if (n < 2 || !segments.get(n - 2).equals("@v")) {
      return new Kind.NotFound("not a GOPROXY path (module/@v/..., module/@latest)");
    }
    String path = String.join("/", segments);
    List<String> module = segments.subList(0, n - 2);
    if (last.equals("list")) {
      return module(module, path, true);
    }
    for (String ext : List.of(".info", ".mod", ".zip")) {
      if (last.endsWith(ext)) {
        String version = last.substring(0, last.length() - ext.length());
        String problem = versionProblem(version);
        if (problem != null) {
          return new Kind.Rejected(problem);
        }
        boolean canonical = isCanonical(version);
        if (!canonical && !ext.equals(".info")) {
          return new Kind.Rejected(ext + " is only served for canonical versions");
        }
        return module(module, path, !canonical);
      }
    }
    return new Kind.NotFound("not a GOPROXY file (list, .info, .mod, .zip)");
  }

  private static Kind module(List<String> module, String path, boolean mutable) {
    String problem = modulePathProblem(module);
    return problem != null ? new Kind.Rejected(problem) : new Kind.Fetch(path, mutable, false);
  }

  private Kind sumdb(List<String> segments) {
    if (sumdbName.isEmpty()) {
      return new Kind.NotFound("no checksum database is proxied by this repository");
    }
    if (segments.size() < 3 || !segments.get(1).equals(sumdbName.get())) {
      return new Kind.NotFound("checksum database not proxied here");
    }
    List<String> rest = segments.subList(2, segments.size());
    String path = String.join("/", rest);
    switch (rest.get(0)) {
      case "supported":
        return rest.size() == 1 ? new Kind.SumdbSupported() : new Kind.NotFound("not a checksum database path");
      case "latest":
        return rest.size() == 1 ? new Kind.Fetch(path, true, true) : new Kind.NotFound("not a checksum database path");
      case "lookup": {
        String target = String.join("/", rest.subList(1, rest.size()));
        int at = target.lastIndexOf('@');
        if (at <= 0) {
          return new Kind.Rejected("a lookup names module@version");
        }
        String problem = modulePathProblem(List.of(target.substring(0, at).split("/", -1)));
        if (problem == null) {
          problem = versionProblem(target.substring(at + 1));
        }
        return problem != null ? new Kind.Rejected(problem) : new Kind.Fetch(path, false, true);
      }
      case "tile":
        if (rest.size() < 4 || !rest.subList(1, rest.size()).stream().allMatch(s -> TILE_SEGMENT.matcher(s).matches())) {
          return new Kind.Rejected("not a checksum database tile path");
        }
        return new Kind.Fetch(path, false, true);
      default:
        return new Kind.NotFound("not a checksum database path");
    }
  }

  /** Why the encoded module path is invalid (golang.org/x/mod/module rules, encoded form), or null. */
  static String modulePathProblem(List<String> elements) {
    if (elements.isEmpty()) {
      return "missing module path";
    }
    for (String e : elements) {
      if (e.isEmpty()) {
        return "empty module path element";
      }
      if (!ENCODED_ELEMENT.matcher(e).matches()) {
        return "invalid module path element (capital letters are sent as '!' + lower case)";
      }
      if (e.startsWith(".") || e.endsWith(".")) {
        return "a module path element may not begin or end with '.'";
      }
    }
    String first = elements.get(0);
    if (!FIRST_ELEMENT.matcher(first).matches() || first.startsWith("-") || first.indexOf('.') < 0) {
      return "the first module path element must be a lower-case domain name";
    }
    return null;
  }

  /** Why the encoded version is invalid, or null. */
  static String versionProblem(String version) {
    if (version.isEmpty()) {
      return "empty version";
    }
    if (!ENCODED_VERSION.matcher(version).matches() || version.startsWith(".") || version.startsWith("-")) {
      return "invalid version (capital letters are sent as '!' + lower case)";
    }
    return null;
  }

  /** Whether the encoded version is a canonical semantic version. */
  static boolean isCanonical(String encodedVersion) {
    return CANONICAL.matcher(decode(encodedVersion)).matches();
  }

  /** {@code !x} back to {@code X}; the input is a valid encoded string. */
  static String decode(String encoded) {
    StringBuilder out = new StringBuilder(encoded.length());
    for (int i = 0; i < encoded.length(); i++) {
      char c = encoded.charAt(i);
      if (c == '!' && i + 1 < encoded.length()) {
        out.append(Character.toUpperCase(encoded.charAt(++i)));
      } else {
        out.append(c);
      }
    }
    return out.toString();
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    Kind kind = classify(request.segments(), request.upstreamPath().endsWith("/"));
    Target target;
    if (kind instanceof Kind.Rejected r) {
      target = new Target.Rejected(r.reason());
    } else if (kind instanceof Kind.NotFound n) {
      target = new Target.NotFound(n.reason());
    } else if (kind instanceof Kind.SumdbSupported) {
      target = new Target.Answer(200, "text/plain; charset=UTF-8", ByteString.emptyByteString(), List.of());
    } else {
      Kind.Fetch f = (Kind.Fetch) kind;
      // Every accepted character is an RFC 3986 pchar, so the path goes upstream as it is.
      String url = (f.sumdb() ? sumdbBase.get() : base) + "/" + f.path();
      target = new Target.Artifact(ArtifactKey.of(name, url), f.mutable(), Optional.empty(), List.of());
    }
    return CompletableFuture.completedFuture(target);
  }

  private static String trimSlash(String url) {
    return url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }
}
