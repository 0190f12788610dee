package dev.corral.registry.oci;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.Header;
import dev.corral.registry.AcceptHeader;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * A registry that speaks the OCI Distribution API (Docker Registry HTTP API v2), mirrored read-only
 * ({@code --repo NAME=oci:URL}, URL the registry's root). Clients reach it under
 * {@code /v2/NAME/}: a mirror setting of {@code corral-host:port/NAME} makes a client ask
 * {@code /v2/NAME/<image>/...}, which Corral asks upstream as {@code URL/v2/<image>/...}.
 *
 * <ul>
 *   <li>{@code <image>/blobs/<digest>}: immutable, keyed by its URL and the digest it names
 *       (SEMANTICS K1), verified while it streams in (B1), never revalidated. The image name stays
 *       in the key: a registry grants access per repository, so a layer is served for an image
 *       only after the upstream served it for that image.
 *   <li>{@code <image>/manifests/<digest>}: the same, asked upstream accepting every manifest type.
 *   <li>{@code <image>/manifests/<tag>}: mutable metadata (metadata TTL, stale-while-revalidate,
 *       stale-if-error), in one variant per set of manifest types the client accepts, asked
 *       upstream with exactly those (no Accept, or none of them, means every type); served with
 *       {@code Vary: Accept}.
 *   <li>{@code <image>/tags/list}, with {@code n} and {@code last} if given: mutable metadata.
 *   <li>Anything else: 404; a malformed name, tag or digest: 400, before any upstream request.
 * </ul>
 *
 * <p>The upstream's {@code Content-Type} and {@code Docker-Content-Digest} are kept with the
 * artifact and served with it.
 */
public final class OciRepository implements Repository {
  /** The manifest media types Corral negotiates, in the order it offers them upstream. */
  public static final List<String> MANIFEST_TYPES = List.of(
      "application/vnd.oci.image.index.v1+json",
      "application/vnd.oci.image.manifest.v1+json",
      "application/vnd.docker.distribution.manifest.list.v2+json",
      "application/vnd.docker.distribution.manifest.v2+json");
  private static final String EVERY_TYPE = String.join(", ", MANIFEST_TYPES);

  /** Sent with every answer under {@code /v2/}: the API version clients check. */
  public static final Header API_VERSION = new Header("Docker-Distribution-API-Version", "registry/2.0");
  private static final List<Header> HEADERS = List.of(API_VERSION);
  private static final List<Header> TAG_HEADERS = List.of(API_VERSION, new Header("Vary", "Accept"));
  private static final int MAX_PAGE = 10_000;

  private final String name;
  private final String root;
  private final Optional<String> singleNameNamespace;
  private final boolean rootMirror;

  public OciRepository(String name, String url) {
    this(name, url, Optional.empty(), false);
  }

  /**
   * @param singleNameNamespace the namespace a one-component image name is asked upstream in
   *     ({@code library} for registries that keep official images there: {@code alpine} is asked
   *     as {@code library/alpine}, and both names share one key)
   * @param rootMirror also served at {@code /v2/<image>/...}, without its name
   */
  public OciRepository(String name, String url, Optional<String> singleNameNamespace, boolean rootMirror) {
    this.name = name;
    this.root = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
    singleNameNamespace.ifPresent(ns -> {
      if (!isNamespace(ns)) {
        throw new IllegalArgumentException("not an image namespace: " + ns);
      }
    });
    this.singleNameNamespace = singleNameNamespace;
    this.rootMirror = rootMirror;
  }

  /** Whether {@code namespace} is one path component of an image name (lower-case letters, digits, separators). */
  public static boolean isNamespace(String namespace) {
    return OciReference.isName(List.of(namespace));
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "oci";
  }

  @Override
  public String upstream() {
    return root;
  }

  @Override
  public boolean distributionApi() {
    return true;
  }

  @Override
  public boolean rootMirror() {
    return rootMirror;
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    return CompletableFuture.completedFuture(target(request));
  }

  private Target target(RepoRequest request) {
    List<String> s = request.segments();
    int n = s.size();
    if (n >= 3 && s.get(n - 2).equals("tags") && s.get(n - 1).equals("list")) {
      return image(s.subList(0, n - 2))
          .<Target>map(image -> tags(image, request.rawQuery()))
          .orElseGet(() -> badName(s.subList(0, n - 2)));
    }
    if (n < 3 || !(s.get(n - 2).equals("manifests") || s.get(n - 2).equals("blobs"))) {
      return new Target.NotFound("OCI: only manifests, blobs and tags/list are served (a mirror is read-only)");
    }
    Optional<String> image = image(s.subList(0, n - 2));
    if (image.isEmpty()) {
      return badName(s.subList(0, n - 2));
    }
    String reference = s.get(n - 1);
    boolean manifest = s.get(n - 2).equals("manifests");
    if (request.rawQuery().isPresent()) {
      return new Target.Rejected("OCI: no query is allowed on a manifest or blob");
    }
    Optional<Digest> digest = OciReference.digest(reference);
    if (digest.isPresent()) {
      String url = root + "/v2/" + image.get() + (manifest ? "/manifests/" : "/blobs/") + digest.get();
      return new Target.Artifact(new ArtifactKey(name, url, manifest ? EVERY_TYPE : "", digest.get()), false,
          Optional.empty(), HEADERS);
    }
    if (OciReference.looksLikeDigest(reference)) {
      return new Target.Rejected("OCI: not a digest Corral can verify (sha256 or sha512, hex): " + reference);
    }
    if (!manifest) {
      return new Target.Rejected("OCI: a blob is named by its digest");
    }
    if (!OciReference.isTag(reference)) {
      return new Target.Rejected("OCI: not a tag: " + reference);
    }
    String url = root + "/v2/" + image.get() + "/manifests/" + reference;
    return new Target.Artifact(new ArtifactKey(name, url, variant(request.accept()), null), true,
        Optional.empty(), TAG_HEADERS);
  }

  /** The image name asked upstream, when the components form one. */
  Optional<String> image(List<String> components) {
    if (!OciReference.isName(components)) {
      return Optional.empty();
    }
    String joined = String.join("/", components);
    if (components.size() == 1 && singleNameNamespace.isPresent()) {
      return Optional.of(singleNameNamespace.get() + "/" + joined);
    }
    return Optional.of(joined);
  }

  private static Target badName(List<String> components) {
    return new Target.Rejected("OCI: not an image name: " + String.join("/", components));
  }

  private Target tags(String image, Optional<String> rawQuery) {
    StringBuilder query = new StringBuilder();
    if (rawQuery.isPresent() && !rawQuery.get().isEmpty()) {
      String count = null;
      String last = null;
      for (String pair : rawQuery.get().split("&", -1)) {
        int eq = pair.indexOf('=');
        String k = eq < 0 ? pair : pair.substring(0, eq);
        String v = eq < 0 ? "" : pair.substring(eq + 1);
        if (k.equals("n") && count == null && v.matches("[0-9]{1,5}") && Integer.parseInt(v) <= MAX_PAGE) {
          count = Integer.toString(Integer.parseInt(v));
        } else if (k.equals("last") && last == null && OciReference.isTag(v)) {
          last = v;
        } else {
          return new Target.Rejected("OCI: tags/list takes only n (up to " + MAX_PAGE + ") and last (a tag)");
        }
      }
      if (count != null) {
        query.append("?n=").append(count);
      }
      if (last != null) {
        query.append(query.length() == 0 ? '?' : '&').append("last=").append(last);
      }
    }
    return new Target.Artifact(ArtifactKey.of(name, root + "/v2/" + image + "/tags/list" + query), true,
        Optional.empty(), HEADERS);
  }

  /**
   * The manifest types a client accepts, in Corral's order, as the {@code Accept} sent upstream
   * (the key's variant): two clients accepting the same types share a key whatever their header's
   * spelling. A client accepting none of them gets every type.
   */
  static String variant(Optional<String> accept) {
    List<String> accepted = new ArrayList<>();
    for (String type : MANIFEST_TYPES) {
      if (AcceptHeader.quality(accept, type) > 0) {
        accepted.add(type);
      }
    }
    return accepted.isEmpty() ? EVERY_TYPE : String.join(", ", accepted);
  }
}
