package dev.corral.core.key;

import dev.corral.core.CborSerializable;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * The identity of one artifact fetch (SEMANTICS K1): repository name, normalised upstream URL
 * (query kept where the repository type keeps it), the representation variant where one URL
 * serves several, and the expected digest when the request itself names one. A digest Corral
 * learns from a document it holds is never part of the key (the key must be the same on every
 * node); the fetch learns it ({@link dev.corral.core.download.FetchSources}). Two keys are equal
 * exactly when they must share a fetch.
 *
 * @param repo the configured repository name
 * @param url the absolute upstream URL, already normalised by the repository adapter
 * @param variant the representation variant: the {@code Accept} header Corral sends upstream for
 *     that representation ("" when the URL has only one; then no {@code Accept} is sent)
 * @param expected the expected digest the request names, or {@code null}
 */
public record ArtifactKey(String repo, String url, String variant, Digest expected)
    implements CborSerializable {

  public ArtifactKey {
    Objects.requireNonNull(repo, "repo");
    Objects.requireNonNull(url, "url");
    variant = variant == null ? "" : variant;
  }

  public static ArtifactKey of(String repo, String url) {
    return new ArtifactKey(repo, url, "", null);
  }

  /** One line per component; the form that is hashed into {@link #id()}. */
  public String canonical() {
    return repo + '\n' + url + '\n' + variant + '\n' + (expected == null ? "" : expected.toString());
  }

  /**
   * A fixed-length id (hex SHA-256 of {@link #canonical()}): the sharding entity id, the
   * persistence id suffix and the store's file name for this key. URLs may be 4 KiB long;
   * journal ids may not.
   */
  public String id() {
    return idOf(canonical());
  }

  /** The {@link #id()} of the key whose {@link #canonical()} form is {@code canonical}. */
  public static String idOf(String canonical) {
    return Sha256.hex(canonical.getBytes(StandardCharsets.UTF_8));
  }

  @Override
  public String toString() {
    // Logged: without the URL's query, where pre-signed URLs carry their signature.
    int query = url.indexOf('?');
    String shown = query < 0 ? url : url.substring(0, query) + "?...";
    return repo + " " + shown + (variant.isEmpty() ? "" : " [" + variant + "]")
        + (expected == null ? "" : " " + expected);
  }
}
