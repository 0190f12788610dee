package dev.corral.registry;

import dev.corral.core.download.FetchSource;
import dev.corral.core.download.FetchSources;
import dev.corral.core.key.ArtifactKey;
import java.util.concurrent.CompletionStage;

/**
 * One configured repository: how a request path of its type maps to what Corral fetches and
 * serves. One implementation per registry type;
 * {@link dev.corral.registry.generic.GenericRepository} is plain HTTP.
 *
 * <p>Contract: {@link #resolve} never throws and never fetches anything itself; when it must know
 * another document (a packument, a checksum file) it reads it through the {@link Lookup}, so that
 * read is coalesced and cached like any request. A repository can never make Corral fetch a URL
 * that neither its configured upstream root nor a document from that upstream named.
 */
public interface Repository {

  /** The configured name: the first path segment of its requests. */
  String name();

  /** The registry type, as configured: {@code npm}, {@code maven}, {@code pypi}, {@code go}, {@code oci}, {@code generic}. */
  String type();

  /** The configured upstream URL, without a trailing slash (never with user information: the settings refuse it). */
  String upstream();

  /** Whether a segment may contain an encoded {@code /} (npm's {@code @scope%2fname}). */
  default boolean allowsEncodedSlash() {
    return false;
  }

  /**
   * Whether clients reach it through the OCI Distribution API, {@code /v2/NAME/...}, rather than
   * {@code /NAME/...} (then {@code /NAME/...} is a 404 that says where to go).
   */
  default boolean distributionApi() {
    return false;
  }

  /**
   * Whether it is also served at {@code /v2/<image>/...} without its name: a path there whose first
   * segment names no repository is this repository's (only for a {@link #distributionApi} type;
   * at most one repository of a node).
   */
  default boolean rootMirror() {
    return false;
  }

  /** What the request names. */
  CompletionStage<Target> resolve(RepoRequest request, Lookup lookup);

  /**
   * Where the fetch of one of this repository's keys gets its bytes and what they must hash to
   * ({@link FetchSources}, whose contract holds): called on whichever node runs the fetch, so it
   * reads what it needs through {@code lookup} ({@link Lookup#body}), never from what this node
   * happens to hold ({@link Lookup#cached}), and the answer is the same on every node (K1). A
   * failed {@link Lookup} fails the fetch. By default the key's own URL and digest.
   */
  default CompletionStage<FetchSource> source(ArtifactKey key, Lookup lookup) {
    return FetchSources.AS_KEYED.of(key);
  }
}
