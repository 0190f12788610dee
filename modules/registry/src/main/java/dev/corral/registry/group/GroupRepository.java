package dev.corral.registry.group;

import dev.corral.core.upstream.Header;
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.corral.registry.GroupMerge;
import dev.corral.registry.Lookup;
import dev.corral.registry.ParsedBodies;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import dev.corral.registry.go.VersionListMerge;
import dev.corral.registry.maven.MavenMetadataMerge;
import dev.corral.registry.pypi.SimplePageMerge;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.util.ByteString;

/**
 * A group (virtual) repository: one URL for clients over other configured repositories of one
 * type (its members, in priority order). It never fetches anything itself: each member resolves
 * the group's request with the group's base URL (so links it rewrites point back at the group),
 * and what it names stays the member's key (K1), so coalescing, verification
 * ({@link Repository#source} of the member), the remembered not-found ({@code negative-ttl}) and
 * storage are the member's own.
 *
 * <ul>
 *   <li>What the type's {@link GroupMerge} merges (Maven {@code maven-metadata.xml} and its
 *       checksums, PyPI project pages, Go {@code @v/list}) is read from every member through the
 *       cache and merged: {@link Target.Merged}. A member that fails is left out and reported; only
 *       when none can answer is it an error.
 *   <li>Everything else (artifacts, npm packuments, Go {@code @latest}) is {@link Target.FirstOf}:
 *       the first member that has it answers.
 * </ul>
 */
public final class GroupRepository implements Repository {
  private final String name;
  private final List<Repository> members;
  private final GroupMerge merge;
  /**
   * Merged documents by what they were made of (the request and each member's document's key and
   * content fingerprint): a hot page is rewritten and merged once per change of a member's
   * document, not once per request. Bounded by {@link #MERGED_MEMORY} bytes.
   */
  private final Cache<String, GroupMerge.Merged> merged = Caffeine.newBuilder()
      .maximumWeight(MERGED_MEMORY)
      .weigher((String k, GroupMerge.Merged m) -> (int) Math.min(Integer.MAX_VALUE, (long) m.body().length() + k.length()))
      .build();

  /** The most a group remembers of its merged documents, bytes. */
  static final long MERGED_MEMORY = 32L * 1024 * 1024;

  public GroupRepository(String name, List<Repository> members, GroupMerge merge) {
    if (members.isEmpty()) {
      throw new IllegalArgumentException("a group needs members");
    }
    this.name = name;
    this.members = List.copyOf(members);
    this.merge = merge;
  }

  /** The merge of a member type: what a group of that type merges, and how. */
  public static GroupMerge mergeOf(String memberType) {
    return switch (memberType) {
      case "maven" -> new MavenMetadataMerge();
      case "pypi" -> new SimplePageMerge();
      case "go" -> new VersionListMerge();
      default -> GroupMerge.NONE; // generic, and npm: the first member that has the package wins
    };
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public String type() {
    return "group";
  }

  /** The members' type. */
  public String memberType() {
    return members.get(0).type();
  }

  public List<Repository> members() {
    return members;
  }

  /** {@code group:M1,M2}, as configured: a group has no upstream of its own. */
  @Override
  public String upstream() {
    return "group:" + String.join(",", members.stream().map(Repository::name).toList());
  }

  @Override
  public boolean allowsEncodedSlash() {
    return members.get(0).allowsEncodedSlash();
  }

  @Override
  public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
    Optional<RepoRequest> from = merge.mergedFrom(request);
    if (from.isPresent()) {
      return merged(request, from.get(), lookup);
    }
    List<Target.Member> each = new ArrayList<>();
    for (Repository m : members) {
      each.add(new Target.Member(m.name(), () -> resolved(m, request, lookup)));
    }
    return CompletableFuture.completedFuture(new Target.FirstOf(each));
  }

  /** A member's resolve, a failed read of a document it needed as {@link Target.Unavailable}. */
  private static CompletionStage<Target> resolved(Repository member, RepoRequest request, Lookup lookup) {
    CompletionStage<Target> resolved;
    try {
      resolved = member.resolve(request, lookup);
    } catch (RuntimeException e) {
      resolved = CompletableFuture.failedFuture(e);
    }
    return resolved.exceptionally(e -> {
      Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (t instanceof Lookup.LookupFailed f) {
        return new Target.Unavailable(f.status(), f.getMessage());
      }
      throw e instanceof CompletionException c ? c : new CompletionException(t);
    });
  }

  /** One member's document for a merge: its body, none (it does not have it), or its failure. */
  private record Part(String member, Optional<ByteString> body, Target.MemberFailure failure, Target target) {
    /** What the merge's output depends on from this member: its document's key and content, or its absence. */
    String identity() {
      if (failure != null) {
        return "failed";
      }
      if (body.isEmpty()) {
        return "none";
      }
      String key = target instanceof Target.Artifact a ? a.key().id() : "answer";
      return key + ':' + ParsedBodies.fingerprint(body.get());
    }

    /** The document as the member serves it to the group's clients (its own rewrite applied). */
    ByteString served() {
      return target instanceof Target.Artifact a && a.rewrite().isPresent() ? a.rewrite().get().rewrite(body.get())
          : body.get();
    }
  }

  private CompletionStage<Target> merged(RepoRequest request, RepoRequest from, Lookup lookup) {
    List<CompletableFuture<Part>> parts = new ArrayList<>();
    for (Repository m : members) {
      parts.add(resolved(m, from, lookup).thenCompose(t -> part(m.name(), t, lookup)).toCompletableFuture());
    }
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(x -> {
      int present = 0;
      List<Target.MemberFailure> failed = new ArrayList<>();
      List<Header> headers = List.of();
      for (CompletableFuture<Part> f : parts) {
        Part p = f.join();
        if (p.target() instanceof Target.Rejected r) {
          return r; // members are of one type: one refuses the path, all do
        }
        if (p.failure() != null) {
          failed.add(p.failure());
        } else if (p.body().isPresent()) {
          if (present++ == 0 && p.target() instanceof Target.Artifact a) {
            headers = a.headers();
          }
        }
      }
      if (present == 0) {
        if (failed.isEmpty()) {
          return new Target.NotFound("no member of " + name + " has it");
        }
        Target.MemberFailure first = failed.get(0);
        return new Target.Unavailable(first.status(), "no member of " + name + " could answer ("
            + String.join("; ", failed.stream().map(fl -> fl.member() + ": " + fl.reason()).toList()) + ")");
      }
      // The members' documents as stored: rewritten and merged only when not remembered.
      GroupMerge.Merged m = merged.get(identity(request, parts), k -> merge.merge(request,
          parts.stream().map(CompletableFuture::join).filter(p -> p.failure() == null && p.body().isPresent())
              .map(Part::served).toList()));
      return new Target.Merged(m.body(), m.contentType(), headers, failed);
    });
  }

  private static String identity(RepoRequest request, List<CompletableFuture<Part>> parts) {
    StringBuilder k = new StringBuilder()
        .append(String.join("/", request.segments())).append('\n')
        .append(request.rawQuery().orElse("")).append('\n')
        .append(request.accept().orElse("")).append('\n')
        .append(request.baseUrl());
    for (CompletableFuture<Part> p : parts) {
      k.append('\n').append(p.join().member()).append('=').append(p.join().identity());
    }
    return k.toString();
  }

  private static CompletionStage<Part> part(String member, Target target, Lookup lookup) {
    if (target instanceof Target.Artifact a) {
      CompletionStage<Optional<ByteString>> body;
      try {
        body = lookup.body(a.key(), a.mutable());
      } catch (RuntimeException e) {
        body = CompletableFuture.failedFuture(e);
      }
      return body.handle((b, e) -> {
        if (e == null) {
          return new Part(member, b, null, a);
        }
        Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
        int status = t instanceof Lookup.LookupFailed f ? f.status() : 502;
        return new Part(member, Optional.empty(), new Target.MemberFailure(member, status, t.getMessage()), a);
      });
    }
    if (target instanceof Target.Answer a && a.status() == 200) {
      return CompletableFuture.completedFuture(new Part(member, Optional.of(a.body()), null, a));
    }
    if (target instanceof Target.Unavailable u) {
      return CompletableFuture.completedFuture(
          new Part(member, Optional.empty(), new Target.MemberFailure(member, u.status(), u.reason()), u));
    }
    return CompletableFuture.completedFuture(new Part(member, Optional.empty(), null, target));
  }
}
