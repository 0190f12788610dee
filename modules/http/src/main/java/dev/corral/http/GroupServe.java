package dev.corral.http;

import static dev.corral.http.Answers.done;
import static dev.corral.http.Answers.text;

import dev.corral.core.fetch.Via;
import dev.corral.core.key.Sha256;
import dev.corral.core.upstream.Header;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * Serves what a group repository resolved to: {@link Target.FirstOf} by serving its members'
 * targets in order until one answers, {@link Target.Merged} as mutable metadata with an ETag of
 * its bytes. A member that failed while another answered is told to the client in a
 * {@code Warning: 199 corral "member NAME failed: STATUS"} header and counted in
 * {@code corral_group_member_failures_total{group,member}}.
 */
final class GroupServe {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(GroupServe.class);
  /** X-Cache of a merged document: made by Corral from its members' cached documents. */
  private static final HttpHeader MERGED = RawHeader.create("X-Cache", "MERGED");

  /** Serves one member's target as the member's own request would be. */
  interface MemberServe {
    CompletionStage<HttpResponse> serve(HttpRequest request, Repository member, Target target);
  }

  private final ActorSystem<?> system;
  private final Map<String, Repository> repos;
  private final RequestCounts counts;
  private final ArtifactResponses responses;
  private final RewrittenMetadata metadata;
  private final MemberServe members;

  GroupServe(ActorSystem<?> system, Map<String, Repository> repos, RequestCounts counts, ArtifactResponses responses,
      RewrittenMetadata metadata, MemberServe members) {
    this.system = system;
    this.repos = repos;
    this.counts = counts;
    this.responses = responses;
    this.metadata = metadata;
    this.members = members;
  }

  /** The first member that answers; a member's 404/410 or failure goes on to the next. */
  CompletionStage<HttpResponse> firstOf(HttpRequest request, Repository group, Target.FirstOf f) {
    return next(request, group, f.members(), 0, new ArrayList<>());
  }

  private CompletionStage<HttpResponse> next(HttpRequest request, Repository group, List<Target.Member> members,
      int i, List<Target.MemberFailure> failed) {
    if (i == members.size()) {
      if (failed.isEmpty()) {
        return done(counts.count(group.name(), "error", text(404, "no member of " + group.name() + " has it")));
      }
      return done(counts.count(group.name(), "error", warned(text(failed.get(0).status(),
          "no member of " + group.name() + " could answer (" + reasons(failed) + ")"), failed)));
    }
    Target.Member member = members.get(i);
    Repository repo = repos.get(member.name());
    CompletionStage<Target> resolved;
    try {
      resolved = member.resolve().get();
    } catch (RuntimeException e) {
      resolved = CompletableFuture.failedFuture(e);
    }
    return resolved.exceptionally(e -> {
      Throwable t = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      log.error("resolving a request of {} in its member {} failed", group.name(), member.name(), t);
      return new Target.Unavailable(500, "internal error");
    }).thenCompose(target -> {
      if (target instanceof Target.NotFound) {
        return next(request, group, members, i + 1, failed);
      }
      if (target instanceof Target.Unavailable u) {
        failed.add(failure(group, member.name(), u.status(), u.reason()));
        return next(request, group, members, i + 1, failed);
      }
      if (target instanceof Target.Rejected) { // members are of one type: one refuses the path, all do
        return this.members.serve(request, group, target);
      }
      return this.members.serve(request, repo, target).thenCompose(r -> {
        int status = r.status().intValue();
        if (status == 404 || status == 410) {
          r.discardEntityBytes(system);
          return next(request, group, members, i + 1, failed);
        }
        if (status >= 500 || status == 429) {
          r.discardEntityBytes(system);
          failed.add(failure(group, member.name(), status, "answered " + status));
          return next(request, group, members, i + 1, failed);
        }
        return done(warned(r, failed));
      });
    });
  }

  /** A merged document: ETag of its bytes, conditional requests and gzip as any metadata. */
  CompletionStage<HttpResponse> merged(HttpRequest request, Repository group, Target.Merged m) {
    for (Target.MemberFailure f : m.failed()) {
      counts.memberFailed(group.name(), f.member());
    }
    String digest = Sha256.hex(m.body());
    List<Header> headers = new ArrayList<>();
    headers.add(new Header("Content-Type", m.contentType()));
    headers.add(new Header("ETag", "\"" + digest.substring(0, 32) + "\""));
    return responses.metadata(request, Via.HIT, headers, m.body(), digest, metadata)
        .thenApply(r -> counts.count(group.name(), "hit", warned(
            ArtifactResponses.withTargetHeaders(r.removeHeader("X-Cache").addHeader(MERGED), m.headers()), m.failed())));
  }

  private Target.MemberFailure failure(Repository group, String member, int status, String reason) {
    counts.memberFailed(group.name(), member);
    return new Target.MemberFailure(member, status, reason);
  }

  /** The answer with one {@code Warning} per member that failed. */
  static HttpResponse warned(HttpResponse r, List<Target.MemberFailure> failed) {
    HttpResponse out = r;
    for (Target.MemberFailure f : failed) {
      out = out.addHeader(RawHeader.create("Warning", "199 corral \"member " + f.member() + " failed: " + f.status() + "\""));
    }
    return out;
  }

  private static String reasons(List<Target.MemberFailure> failed) {
    return String.join("; ", failed.stream().map(f -> f.member() + ": " + f.reason()).toList());
  }
}
