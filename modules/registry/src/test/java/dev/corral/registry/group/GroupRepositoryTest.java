package dev.corral.registry.group;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.registry.Lookup;
import dev.corral.registry.MapLookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import dev.corral.registry.generic.GenericRepository;
import dev.corral.registry.maven.MavenRepository;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class GroupRepositoryTest {
  private static RepoRequest request(String path) {
    return new RepoRequest(List.of(path.split("/")), "/" + path, Optional.empty(), Optional.empty(), "http://c/g");
  }

  private static Target resolve(GroupRepository g, String path, MapLookup lookup) throws Exception {
    return g.resolve(request(path), lookup).toCompletableFuture().get();
  }

  /** A member that counts the times it is asked to resolve a request. */
  private static final class Counted implements Repository {
    private final Repository member;
    final AtomicInteger resolves = new AtomicInteger();

    Counted(Repository member) {
      this.member = member;
    }

    @Override
    public String name() {
      return member.name();
    }

    @Override
    public String type() {
      return member.type();
    }

    @Override
    public String upstream() {
      return member.upstream();
    }

    @Override
    public CompletionStage<Target> resolve(RepoRequest request, Lookup lookup) {
      resolves.incrementAndGet();
      return member.resolve(request, lookup);
    }
  }

  @Test
  void anArtifactIsTheFirstOfItsMembersKeysEachResolvedOnlyWhenAsked() throws Exception {
    Counted a = new Counted(new GenericRepository("a", "http://127.0.0.1:1/a"));
    Counted b = new Counted(new GenericRepository("b", "http://127.0.0.1:1/b"));
    GroupRepository g = new GroupRepository("g", List.of(a, b), GroupRepository.mergeOf("generic"));
    MapLookup lookup = new MapLookup();
    Target.FirstOf f = assertInstanceOf(Target.FirstOf.class, resolve(g, "x/y.bin", lookup));
    assertEquals(List.of("a", "b"), f.members().stream().map(Target.Member::name).toList());
    assertEquals(List.of(0, 0), List.of(a.resolves.get(), b.resolves.get()), "no member resolved before it is asked");
    assertEquals(List.of(), lookup.reads, "nothing read for the group");

    Target.Artifact second = assertInstanceOf(Target.Artifact.class,
        f.members().get(1).resolve().get().toCompletableFuture().get());
    assertEquals(List.of(0, 1), List.of(a.resolves.get(), b.resolves.get()), "only the member asked, once");
    assertEquals(List.of(), lookup.reads, "a generic member's resolve reads nothing either");
    assertEquals("b", second.key().repo(), "a member's key stays the member's (K1)");
    assertEquals("http://127.0.0.1:1/b/x/y.bin", second.key().url());
    assertEquals("group:a,b", g.upstream());
  }

  @Test
  void mavenMetadataIsReadFromEveryMemberAndAFailingOneIsReported() throws Exception {
    GroupRepository g = new GroupRepository("g", List.of(new MavenRepository("a", "http://127.0.0.1:1/a"),
        new MavenRepository("b", "http://127.0.0.1:1/b"), new MavenRepository("c", "http://127.0.0.1:1/c")),
        GroupRepository.mergeOf("maven"));
    MapLookup lookup = new MapLookup()
        .body("http://127.0.0.1:1/b/o/l/maven-metadata.xml",
            "<metadata><versioning><versions><version>1.0</version></versions></versioning></metadata>")
        .body("http://127.0.0.1:1/c/o/l/maven-metadata.xml",
            "<metadata><versioning><versions><version>2.0</version></versions></versioning></metadata>");
    lookup.failing.put("http://127.0.0.1:1/a/o/l/maven-metadata.xml", true);
    Target.Merged m = assertInstanceOf(Target.Merged.class, resolve(g, "o/l/maven-metadata.xml", lookup));
    assertTrue(m.body().utf8String().contains("<version>1.0</version>") && m.body().utf8String().contains("<version>2.0</version>"),
        m.body().utf8String());
    assertEquals(List.of("a"), m.failed().stream().map(Target.MemberFailure::member).toList());

    lookup.failing.put("http://127.0.0.1:1/b/o/l/maven-metadata.xml", true);
    lookup.failing.put("http://127.0.0.1:1/c/o/l/maven-metadata.xml", true);
    Target.Unavailable u = assertInstanceOf(Target.Unavailable.class, resolve(g, "o/l/maven-metadata.xml", lookup));
    assertEquals(502, u.status());
    assertInstanceOf(Target.NotFound.class, resolve(g, "o/none/maven-metadata.xml", lookup),
        "no member has it and none failed: not found");
  }

  @Test
  void aMergedDocumentIsRememberedUntilAMembersDocumentChanges() throws Exception {
    java.util.concurrent.atomic.AtomicInteger merges = new java.util.concurrent.atomic.AtomicInteger();
    dev.corral.registry.GroupMerge counting = new dev.corral.registry.GroupMerge() {
      @Override
      public Optional<RepoRequest> mergedFrom(RepoRequest request) {
        return Optional.of(request);
      }

      @Override
      public Merged merge(RepoRequest request, List<org.apache.pekko.util.ByteString> bodies) {
        merges.incrementAndGet();
        return new Merged(org.apache.pekko.util.ByteString.fromString(String.join("+",
            bodies.stream().map(org.apache.pekko.util.ByteString::utf8String).toList())), "text/plain");
      }
    };
    GroupRepository g = new GroupRepository("g", List.of(new GenericRepository("a", "http://127.0.0.1:1/a"),
        new GenericRepository("b", "http://127.0.0.1:1/b")), counting);
    MapLookup lookup = new MapLookup().body("http://127.0.0.1:1/a/doc", "A1").body("http://127.0.0.1:1/b/doc", "B1");
    assertEquals("A1+B1", assertInstanceOf(Target.Merged.class, resolve(g, "doc", lookup)).body().utf8String());
    assertEquals("A1+B1", assertInstanceOf(Target.Merged.class, resolve(g, "doc", lookup)).body().utf8String());
    assertEquals(1, merges.get(), "the same documents are merged once");
    lookup.body("http://127.0.0.1:1/b/doc", "B2");
    assertEquals("A1+B2", assertInstanceOf(Target.Merged.class, resolve(g, "doc", lookup)).body().utf8String());
    assertEquals(2, merges.get());
    lookup.failing.put("http://127.0.0.1:1/a/doc", true);
    assertEquals("B2", assertInstanceOf(Target.Merged.class, resolve(g, "doc", lookup)).body().utf8String(),
        "a failed member is not merged from what was remembered");
  }
}
