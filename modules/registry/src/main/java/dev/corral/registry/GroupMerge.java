package dev.corral.registry;

import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;

/**
 * How a group of repositories of one type merges its members' metadata into the one document its
 * clients expect (Maven's {@code maven-metadata.xml}, PyPI's project pages, Go's {@code @v/list}).
 * What it does not merge is answered by the first member that has it ({@link Target.FirstOf}).
 *
 * <p>Contract: {@link #merge} is pure and deterministic: the same bodies in the same order give
 * the same bytes, whatever node or time. It never throws: a body it cannot read contributes
 * nothing, and when none can be read the first body is answered as it is.
 */
public interface GroupMerge {

  /** The merged body and its media type. */
  record Merged(ByteString body, String contentType) {}

  /**
   * The request whose members' documents are merged to answer {@code request} (itself, or for
   * Maven's {@code maven-metadata.xml.sha1} the {@code maven-metadata.xml} it is the checksum
   * of); empty when the first member that has it answers.
   */
  Optional<RepoRequest> mergedFrom(RepoRequest request);

  /**
   * The answer to {@code request} from its members' documents.
   *
   * @param bodies the members' documents as they serve them to the group's clients (rewritten to
   *     the group's URL), in priority order, only those of members that have it; at least one
   */
  Merged merge(RepoRequest request, List<ByteString> bodies);

  /** Merges nothing: every request is answered by the first member that has it. */
  GroupMerge NONE = new GroupMerge() {
    @Override
    public Optional<RepoRequest> mergedFrom(RepoRequest request) {
      return Optional.empty();
    }

    @Override
    public Merged merge(RepoRequest request, List<ByteString> bodies) {
      throw new IllegalStateException("merges nothing");
    }
  };

  /** The same request for another path: the last segment replaced by {@code file}. */
  static RepoRequest sibling(RepoRequest request, String file) {
    List<String> segments = new java.util.ArrayList<>(request.segments());
    segments.set(segments.size() - 1, file);
    String path = request.upstreamPath();
    String upstreamPath = path.substring(0, path.lastIndexOf('/') + 1) + PathSegment.encode(file);
    return new RepoRequest(segments, upstreamPath, request.rawQuery(), request.accept(), request.baseUrl());
  }
}
