package dev.corral.registry.maven;

import dev.corral.core.download.FetchSource;
import dev.corral.core.download.FetchSources;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.regex.Pattern;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Maven repository in the maven2 layout: {@code /{name}/{path}} is {@code URL/{path}}; the query
 * is ignored (Maven sends none) and never part of the key.
 *
 * <ul>
 *   <li>{@code maven-metadata.xml} at any level and non-timestamped {@code -SNAPSHOT} files are
 *       mutable. Their checksum files ({@code .sha1}, {@code .md5}, {@code .sha256},
 *       {@code .sha512}) are answered by Corral, computed from the cached bytes of the file they
 *       belong to, so a file and its checksum always agree even though Maven fetches them in two
 *       requests and the file may be refreshed between them.
 *   <li>Every other file (release artifacts, timestamped snapshot files) is immutable and is
 *       verified: its key is its URL alone (K1); the fetch, wherever it runs, reads the strongest
 *       checksum its upstream publishes ({@code .sha512}, else {@code .sha256}, else
 *       {@code .sha1}) through the cache first ({@link #source}) and verifies the bytes against
 *       it, so bytes that do not match are never stored or served (502).
 *       With no checksum upstream (404 for all three) the file is served unverified and counted
 *       ({@code corral_unverified_fetches_total}). A checksum file that is not a hex digest of
 *       its kind is logged as a warning and the next weaker one is used, or none: Maven checks
 *       the same files itself and reports them, so refusing the artifact would only make Corral
 *       stricter than the client's own checksum policy.
 *   <li>Checksum files of immutable files are fetched from the upstream and immutable.
 * </ul>
 *
 * <p>Path segments must be made of {@code [A-Za-z0-9._~+!@$()=,-]}; anything else is rejected
 * (400). Directory listings and checksums of checksum files are not served (404).
 */
public final class MavenRepository implements Repository {
  private static final Logger log = LoggerFactory.getLogger(MavenRepository.class);

  private static final Pattern SEGMENT = Pattern.compile("[A-Za-z0-9._~+!@$()=,-]+");
  /** The timestamp Maven puts in deployed snapshot file names: {@code -20261202.094700-1}. */
  private static final Pattern TIMESTAMPED = Pattern.compile(".*-\\d{8}\\.\\d{6}-\\d+.*");
  private static final Pattern HEX = Pattern.compile("[0-9a-fA-F]+");
  private static final Map<String, Integer> HEX_LENGTHS = Map.of("sha1", 40, "sha256", 64, "sha512", 128);
  /** The checksum files that verify a release file, strongest first (md5 is not a verification). */
  private static final List<String> VERIFIED_BY = List.of("sha512", "sha256", "sha1");
  /** Checksum file extensions, by their {@link Digest} algorithm. */
  private static final List<String> CHECKSUMS = List.of("sha1", "md5", "sha256", "sha512");

  private final String name;
  private final String base;

  public MavenRepository(String name, String url) {
    this.name = name;
    this.base = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "maven";
  }

  @Override
  public String upstream() {
    return base;
  }

  /** What a path in this repository is. */
  public sealed interface Kind {
    /** A file fetched upstream: {@code mutable} metadata or an immutable file, {@code verified} against its strongest upstream checksum. */
    record File(String path, boolean mutable, boolean verified) implements Kind {}

    /** The checksum of a mutable file: computed by Corral from that file's cached bytes. */
    record ComputedChecksum(String filePath, String algorithm) implements Kind {}

    record NotFound(String reason) implements Kind {}

    record Rejected(String reason) implements Kind {}
  }

  /** Classifies a request path (segments after the repository name); pure, for tests and {@link #resolve}. */
  public static Kind classify(List<String> segments, boolean directory) {
    if (directory) {
      return new Kind.NotFound("directory listings are not served");
    }
    for (String s : segments) {
      if (!SEGMENT.matcher(s).matches()) {
        return new Kind.Rejected("invalid character in a Maven path segment");
      }
    }
    String path = String.join("/", segments);
    String file = segments.get(segments.size() - 1);
    Optional<String> checksum = checksumAlgorithm(file);
    if (checksum.isPresent()) {
      String target = file.substring(0, file.length() - checksum.get().length() - 1);
      if (target.isEmpty()) {
        return new Kind.Rejected("a checksum file needs a file name");
      }
      if (checksumAlgorithm(target).isPresent()) {
        return new Kind.NotFound("checksums of checksum files are not served");
      }
      String targetPath = path.substring(0, path.length() - checksum.get().length() - 1);
      if (isMutable(segments, target)) {
        return new Kind.ComputedChecksum(targetPath, checksum.get());
      }
      return new Kind.File(path, false, false);
    }
    if (isMutable(segments, file)) {
      return new Kind.File(path, true, false);
    }
    return new Kind.File(path, false, true);
  }

  /** {@code maven-metadata.xml} anywhere, and {@code -SNAPSHOT} files that carry no deploy timestamp. */
  private static boolean isMutable(List<String> segments, String file) {
    if (file.equals("maven-metadata.xml")) {
      return true;
    }
    boolean snapshotDir = segments.size() >= 2 && segments.get(segments.size() - 2).endsWith("-SNAPSHOT");
    return snapshotDir && file.contains("-SNAPSHOT") && !TIMESTAMPED.matcher(file).matches();
  }

  private static Optional<String> checksumAlgorithm(String file) {
    int dot = file.lastIndexOf('.');
    if (dot < 0) {
      return Optional.empty();
    }
    String ext = file.substring(dot + 1);
    return CHECKSUMS.contains(ext) ? Optional.of(ext) : Optional.empty();
  }

  /**
   * The SHA-1 a {@code .sha1} file states: its first whitespace-separated token, when that is 40
   * hex digits ({@code <hex>} and {@code <hex>  <file name>} are both in use); empty otherwise.
   */
  public static Optional<Digest> parseSha1(ByteString body) {
    return parseChecksum("sha1", body);
  }

  /**
   * The digest a checksum file of {@code algorithm} ({@code sha1}, {@code sha256}, {@code sha512})
   * states: its first whitespace-separated token, when that is hex of the algorithm's length;
   * empty otherwise.
   */
  public static Optional<Digest> parseChecksum(String algorithm, ByteString body) {
    Integer length = HEX_LENGTHS.get(algorithm);
    String text = body.utf8String().strip();
    String first = text.isEmpty() ? "" : text.split("\\s+", 2)[0];
    return length != null && first.length() == length && HEX.matcher(first).matches()
        ? Optional.of(new Digest(algorithm, first)) : Optional.empty();
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    Kind kind = classify(request.segments(), request.upstreamPath().endsWith("/"));
    if (kind instanceof Kind.Rejected r) {
      return done(new Target.Rejected(r.reason()));
    }
    if (kind instanceof Kind.NotFound n) {
      return done(new Target.NotFound(n.reason()));
    }
    if (kind instanceof Kind.ComputedChecksum c) {
      return lookup.body(key(c.filePath()), true).thenApply(body -> body
          .<Target>map(b -> new Target.Answer(200, "text/plain; charset=UTF-8",
              ByteString.fromString(hex(c.algorithm(), b)), List.of()))
          .orElseGet(() -> new Target.NotFound("not found upstream")));
    }
    Kind.File f = (Kind.File) kind;
    // K1: the key is the file's URL on every node; its .sha1 verifies the fetch (source).
    return done(new Target.Artifact(key(f.path()), f.mutable(), Optional.empty(), List.of()));
  }

  /**
   * A verified file's upstream URL and the strongest digest its upstream publishes for it: its
   * {@code .sha512}, else its {@code .sha256}, else its {@code .sha1}, each read through the cache
   * by the fetch wherever it runs (immutable: the upstream sees one request for each file asked,
   * cluster-wide), a weaker one only when the stronger is not there (404) or is not a digest of
   * its kind (a warning). None at all: the file is fetched unverified ({@link
   * FetchSource#unverified}, counted). A checksum file that cannot be read (upstream down): the
   * lookup's failure, so the fetch fails and nothing is stored (a copy already held is a hit and
   * never gets here). Every other key: as keyed.
   */
  @Override
  public CompletionStage<FetchSource> source(ArtifactKey key, Lookup lookup) {
    String prefix = base + "/";
    if (!key.repo().equals(name) || !key.variant().isEmpty() || key.expected() != null
        || !key.url().startsWith(prefix) || key.url().length() == prefix.length()) {
      return FetchSources.AS_KEYED.of(key);
    }
    String path = key.url().substring(prefix.length());
    if (!(classify(List.of(path.split("/", -1)), false) instanceof Kind.File f) || !f.verified()) {
      return FetchSources.AS_KEYED.of(key);
    }
    return strongest(key, path, 0, lookup);
  }

  /** The first of {@link #VERIFIED_BY}, from {@code from} on, that the upstream publishes as a digest. */
  private CompletionStage<FetchSource> strongest(ArtifactKey file, String path, int from, Lookup lookup) {
    if (from == VERIFIED_BY.size()) {
      log.info("{}: the upstream publishes no checksum for {}; fetching it unverified", name, file.url());
      return CompletableFuture.completedFuture(FetchSource.unverified(file.url()));
    }
    String algorithm = VERIFIED_BY.get(from);
    return lookup.body(key(path + "." + algorithm), false).thenCompose(body -> {
      if (body.isEmpty()) {
        return strongest(file, path, from + 1, lookup);
      }
      Optional<Digest> digest = parseChecksum(algorithm, body.get());
      if (digest.isEmpty()) {
        log.warn("{}: the upstream's {}.{} is not a {} digest; trying a weaker checksum", name, file.url(),
            algorithm, algorithm);
        return strongest(file, path, from + 1, lookup);
      }
      return CompletableFuture.completedFuture(new FetchSource(file.url(), digest.get()));
    });
  }

  private ArtifactKey key(String path) {
    return ArtifactKey.of(name, base + "/" + path);
  }

  static String hex(String algorithm, ByteString bytes) {
    try {
      MessageDigest md = MessageDigest.getInstance(new Digest(algorithm, "0").jcaName());
      md.update(bytes.asByteBuffer());
      return HexFormat.of().formatHex(md.digest());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static CompletionStage<Target> done(Target t) {
    return CompletableFuture.completedFuture(t);
  }

  @Override
  public String toString() {
    return "maven " + name + " " + base;
  }
}
