package dev.corral.core.store;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The keys of one repository whose upstream URL starts with {@code urlPrefix} (every key of the
 * repository for an empty prefix): what a purge by prefix removes and the admin listing shows.
 * Variants and expected digests of a URL are all matched.
 */
public record KeyPrefix(String repo, String urlPrefix) {

  public KeyPrefix {
    if (repo.isEmpty() || repo.indexOf('\n') >= 0 || urlPrefix.indexOf('\n') >= 0) {
      throw new IllegalArgumentException("a key prefix has a repository and no line breaks");
    }
  }

  /** Whether the stored artifact is one of these keys ({@code ArtifactKey.canonical()} starts with the repository line). */
  public boolean matches(StoredArtifact artifact) {
    String key = artifact.key();
    return key.length() > repo.length() && key.startsWith(repo) && key.charAt(repo.length()) == '\n'
        && key.startsWith(urlPrefix, repo.length() + 1);
  }

  /**
   * Removes every matching key from {@code store} (a blob goes when no key refers to it any more)
   * and returns their ids. A key committed while this runs may stay.
   */
  public List<String> dropFrom(ArtifactStore store) throws IOException {
    List<String> dropped = new ArrayList<>();
    for (StoredArtifact a : store.matching(this::matches)) {
      if (store.remove(a.keyId())) {
        dropped.add(a.keyId());
      }
    }
    return dropped;
  }
}
