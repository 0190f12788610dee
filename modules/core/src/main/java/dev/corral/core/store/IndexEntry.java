package dev.corral.core.store;

/**
 * One key of the store's index: what is stored, and when it was last used (committed, served or
 * revalidated). Mutable under the store's lock only. The index keeps keys in least-recently-used
 * order, so {@code usedAtMillis} never decreases from its eldest entry to its newest (while the
 * clock does not go back): a walk for keys unused since a time stops at the first one used since.
 */
final class IndexEntry {
  final StoredArtifact artifact;
  long usedAtMillis;

  IndexEntry(StoredArtifact artifact, long usedAtMillis) {
    this.artifact = artifact;
    this.usedAtMillis = usedAtMillis;
  }
}
