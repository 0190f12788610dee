package dev.corral.registry;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Lifetime;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.util.ByteString;

/** What a {@link RepoRequest} resolves to. */
public sealed interface Target {

  /**
   * Fetch the key through the cache (coalesced, verified, stored) and serve it.
   *
   * @param key the key: upstream URL, variant (the {@code Accept} Corral sends upstream) and the
   *     expected digest when the request itself names one (K1: a digest learned from a document
   *     Corral holds is the fetch's business, {@link Repository#source}, never the key's)
   * @param lifetime how long a stored copy is fresh before it is revalidated: {@link Lifetime#METADATA}
   *     for metadata that changes upstream (packuments, index pages, {@code maven-metadata.xml},
   *     {@code @v/list}), served within the repository's metadata TTL; {@link Lifetime#IMMUTABLE}
   *     for artifacts, never revalidated; a generic repository's paths follow its freshness rules
   *     or the upstream's headers
   * @param rewrite applied to the body each time it is served (never to what is stored); empty
   *     for bodies served as stored
   * @param headers added to the response (for example {@code Vary: Accept})
   */
  record Artifact(ArtifactKey key, Lifetime lifetime, Optional<BodyRewrite> rewrite, List<Header> headers)
      implements Target {
    public Artifact {
      headers = List.copyOf(headers);
    }

    /** @param mutable metadata with the repository's TTL, else an immutable artifact */
    public Artifact(ArtifactKey key, boolean mutable, Optional<BodyRewrite> rewrite, List<Header> headers) {
      this(key, Lifetime.of(mutable), rewrite, headers);
    }

    /** An immutable artifact served as stored. */
    public static Artifact immutable(ArtifactKey key) {
      return new Artifact(key, false, Optional.empty(), List.of());
    }

    /** A file served as stored, fresh for {@code lifetime}. */
    public static Artifact file(ArtifactKey key, Lifetime lifetime) {
      return new Artifact(key, lifetime, Optional.empty(), List.of());
    }

    /**
     * Whether it is package metadata, fresh within the repository's metadata TTL (and so, outside
     * the OCI API, sent gzip-encoded to a client that takes it). A generic repository's files are
     * not, whatever their lifetime.
     */
    public boolean mutable() {
      return lifetime.kind() == Lifetime.Kind.METADATA;
    }
  }

  /**
   * An answer the repository makes itself, without the upstream (a checksum computed from cached
   * bytes, a "not supported" probe answer).
   */
  record Answer(int status, String contentType, ByteString body, List<Header> headers) implements Target {
    public Answer {
      headers = List.copyOf(headers);
    }
  }

  /** This repository type has nothing at the path: 404 with a one-line reason. */
  record NotFound(String reason) implements Target {}

  /** The request is malformed for this repository type: 400 with a one-line reason. */
  record Rejected(String reason) implements Target {}

  /**
   * The repository could not resolve the request now: a document it must read could not be read
   * (the upstream erred or timed out). Answered with {@code status} (502, 503 or 504).
   */
  record Unavailable(int status, String reason) implements Target {}

  /**
   * A group's request for something that does not change (an artifact, or metadata that the
   * first member having it answers, as npm packuments): its members in priority order, each
   * resolved only when the ones before it did not answer. The first member that answers is
   * served; a member's not-found (404/410, fresh or remembered for its {@code negative-ttl}) goes
   * on to the next; so does a member's failure (5xx, a timeout), which the answer then reports.
   * Only when no member answers is the request an error: 404 if every member said not found, else
   * the first failure's status.
   */
  record FirstOf(List<Member> members) implements Target {
    public FirstOf {
      members = List.copyOf(members);
    }
  }

  /** One member of a group and how it resolves the group's request (called at most once, when its turn comes). */
  record Member(String name, Supplier<CompletionStage<Target>> resolve) {}

  /**
   * Metadata a group merged from its members' documents (each read through the cache under the
   * member's own key), served as mutable metadata whose ETag is derived from these bytes.
   *
   * @param failed the members that could not answer (their documents are missing from the merge)
   */
  record Merged(ByteString body, String contentType, List<Header> headers, List<MemberFailure> failed)
      implements Target {
    public Merged {
      headers = List.copyOf(headers);
      failed = List.copyOf(failed);
    }
  }

  /** A group member that could not answer: the status its failure maps to (502, 503, 504) and why. */
  record MemberFailure(String member, int status, String reason) {}
}
