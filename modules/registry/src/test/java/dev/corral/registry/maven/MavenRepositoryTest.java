package dev.corral.registry.maven;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.download.FetchSource;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.registry.Lookup;
import dev.corral.registry.MapLookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletionException;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class MavenRepositoryTest {
  private static final String UP = "http://127.0.0.1:9/repo";
  private static final String SHA1 = "0123456789abcdef0123456789abcdef01234567";
  private static final String SHA256 = "ab".repeat(32);
  private static final String SHA512 = "cd".repeat(64);

  private final MavenRepository repo = new MavenRepository("m2", UP + "/");

  static RepoRequest request(String path) {
    List<String> segments = List.of(path.replaceAll("/$", "").split("/"));
    return new RepoRequest(segments, "/" + path, Optional.empty(), Optional.empty(), "http://127.0.0.1:8080/m2");
  }

  private Target resolve(String path, Lookup lookup) {
    return repo.resolve(request(path), lookup).toCompletableFuture().join();
  }

  private static MavenRepository.Kind kind(String path) {
    return MavenRepository.classify(List.of(path.split("/")), false);
  }

  @Test
  void releaseFilesAreImmutableAndVerified() {
    assertEquals(new MavenRepository.Kind.File("com/example/demo/1.0/demo-1.0.jar", false, true),
        kind("com/example/demo/1.0/demo-1.0.jar"));
    assertEquals(new MavenRepository.Kind.File("com/example/demo/1.0/demo-1.0.pom", false, true),
        kind("com/example/demo/1.0/demo-1.0.pom"));
    assertEquals(new MavenRepository.Kind.File("com/example/demo/1.0/demo-1.0-sources.jar", false, true),
        kind("com/example/demo/1.0/demo-1.0-sources.jar"));
  }

  @Test
  void metadataAndPlainSnapshotsAreMutable() {
    assertEquals(new MavenRepository.Kind.File("com/example/demo/maven-metadata.xml", true, false),
        kind("com/example/demo/maven-metadata.xml"));
    assertEquals(new MavenRepository.Kind.File("com/example/maven-metadata.xml", true, false),
        kind("com/example/maven-metadata.xml"));
    assertEquals(new MavenRepository.Kind.File("com/example/demo/1.2-SNAPSHOT/maven-metadata.xml", true, false),
        kind("com/example/demo/1.2-SNAPSHOT/maven-metadata.xml"));
    assertEquals(new MavenRepository.Kind.File("com/example/demo/1.2-SNAPSHOT/demo-1.2-SNAPSHOT.jar", true, false),
        kind("com/example/demo/1.2-SNAPSHOT/demo-1.2-SNAPSHOT.jar"));
  }

  @Test
  void timestampedSnapshotsAreImmutableAndVerified() {
    assertEquals(new MavenRepository.Kind.File(
            "com/example/demo/1.2-SNAPSHOT/demo-1.2-20261202.094700-1.jar", false, true),
        kind("com/example/demo/1.2-SNAPSHOT/demo-1.2-20261202.094700-1.jar"));
  }

  @Test
  void checksumsOfImmutableFilesAreFetchedAndOfMutableFilesComputed() {
    for (String alg : List.of("sha1", "md5", "sha256", "sha512")) {
      assertEquals(new MavenRepository.Kind.File("g/a/1/a-1.jar." + alg, false, false), kind("g/a/1/a-1.jar." + alg));
      assertEquals(new MavenRepository.Kind.ComputedChecksum("g/a/maven-metadata.xml", alg),
          kind("g/a/maven-metadata.xml." + alg));
      assertEquals(new MavenRepository.Kind.ComputedChecksum("g/a/1-SNAPSHOT/a-1-SNAPSHOT.pom", alg),
          kind("g/a/1-SNAPSHOT/a-1-SNAPSHOT.pom." + alg));
    }
    assertInstanceOf(MavenRepository.Kind.NotFound.class, kind("g/a/1/a-1.jar.sha1.md5"));
  }

  @Test
  void hostileOrOddPathsAreRejected() {
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/a b.jar"));
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/a\"1.jar"));
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/a%2e.jar"));
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/\u00e9.jar"));
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/a?.jar"));
    assertInstanceOf(MavenRepository.Kind.Rejected.class, kind("g/a/1/.sha1"));
    assertInstanceOf(MavenRepository.Kind.NotFound.class, MavenRepository.classify(List.of("g", "a"), true));
  }

  @Test
  void sha1FilesParseInBothForms() {
    assertEquals(Optional.of(new Digest("sha1", SHA1)), MavenRepository.parseSha1(ByteString.fromString(SHA1)));
    assertEquals(Optional.of(new Digest("sha1", SHA1)),
        MavenRepository.parseSha1(ByteString.fromString(SHA1.toUpperCase() + "  demo-1.0.jar\n")));
    assertEquals(Optional.of(new Digest("sha1", SHA1)), MavenRepository.parseSha1(ByteString.fromString("\n " + SHA1 + "\r\n")));
    assertEquals(Optional.empty(), MavenRepository.parseSha1(ByteString.fromString("")));
    assertEquals(Optional.empty(), MavenRepository.parseSha1(ByteString.fromString("<html>oops</html>")));
    assertEquals(Optional.empty(), MavenRepository.parseSha1(ByteString.fromString(SHA1.substring(1))));
    assertEquals(Optional.empty(), MavenRepository.parseSha1(ByteString.fromString(SHA1 + "0")));
    assertEquals(Optional.empty(), MavenRepository.parseSha1(ByteString.fromString("MD5 (x) = " + SHA1)));
  }

  private FetchSource source(String path, Lookup lookup) {
    ArtifactKey key = ((Target.Artifact) resolve(path, lookup)).key();
    return repo.source(key, lookup).toCompletableFuture().join();
  }

  @Test
  void anArtifactIsKeyedByItsUrlAloneWhateverTheNodeHolds() {
    // K1: the .sha1 is learned by the fetch, never part of the key; resolving reads nothing.
    MapLookup lookup = new MapLookup().body(UP + "/g/a/1/a-1.jar.sha1", SHA1.toUpperCase() + "  a-1.jar\n");
    ArtifactKey plain = ArtifactKey.of("m2", UP + "/g/a/1/a-1.jar");
    assertEquals(Target.Artifact.immutable(plain), resolve("g/a/1/a-1.jar", lookup));
    lookup.cachedBodies.put(ArtifactKey.of("m2", UP + "/g/a/1/a-1.jar.sha1").canonical(), ByteString.fromString(SHA1));
    assertEquals(Target.Artifact.immutable(plain), resolve("g/a/1/a-1.jar", lookup));
    assertTrue(lookup.reads.isEmpty());
  }

  @Test
  void theFetchVerifiesAnArtifactWithTheSha1ItsChecksumFileStates() {
    MapLookup lookup = new MapLookup().body(UP + "/g/a/1/a-1.jar.sha1", SHA1.toUpperCase() + "  a-1.jar\n");
    assertEquals(new FetchSource(UP + "/g/a/1/a-1.jar", new Digest("sha1", SHA1)), source("g/a/1/a-1.jar", lookup));
    // no .sha512 nor .sha256 upstream: the .sha1 is the strongest published
    assertEquals(3, lookup.reads.size());
    assertEquals(ArtifactKey.of("m2", UP + "/g/a/1/a-1.jar.sha1"), lookup.reads.get(2).getKey());
    assertTrue(lookup.reads.stream().noneMatch(Map.Entry::getValue), "a release checksum is immutable");
    // metadata and checksum files are fetched as keyed, reading nothing
    MapLookup none = new MapLookup();
    assertEquals(new FetchSource(UP + "/g/a/maven-metadata.xml", null), source("g/a/maven-metadata.xml", none));
    assertEquals(new FetchSource(UP + "/g/a/1/a-1.jar.sha1", null), source("g/a/1/a-1.jar.sha1", none));
    assertTrue(none.reads.isEmpty());
  }

  @Test
  void withoutAChecksumUpstreamTheArtifactIsFetchedUnverifiedAndSaysSo() {
    MapLookup lookup = new MapLookup();
    assertEquals(FetchSource.unverified(UP + "/g/a/1/a-1.jar"), source("g/a/1/a-1.jar", lookup));
    assertEquals(List.of(UP + "/g/a/1/a-1.jar.sha512", UP + "/g/a/1/a-1.jar.sha256", UP + "/g/a/1/a-1.jar.sha1"),
        lookup.reads.stream().map(r -> r.getKey().url()).toList(), "every checksum the upstream may publish was asked");
  }

  @Test
  void aMalformedChecksumLeavesTheArtifactUnverified() {
    MapLookup lookup = new MapLookup().body(UP + "/g/a/1/a-1.jar.sha1", "<html>not found</html>");
    assertEquals(FetchSource.unverified(UP + "/g/a/1/a-1.jar"), source("g/a/1/a-1.jar", lookup));
  }

  /** Item 9: the strongest checksum the upstream publishes verifies the fetch; a weaker one is not read. */
  @Test
  void theStrongestPublishedChecksumVerifiesTheArtifact() {
    String jar = UP + "/g/a/1/a-1.jar";
    MapLookup all = new MapLookup().body(jar + ".sha1", SHA1).body(jar + ".sha256", SHA256 + "  a-1.jar\n")
        .body(jar + ".sha512", SHA512.toUpperCase() + "\n");
    assertEquals(new FetchSource(jar, new Digest("sha512", SHA512)), source("g/a/1/a-1.jar", all));
    assertEquals(List.of(jar + ".sha512"), all.reads.stream().map(r -> r.getKey().url()).toList());
    assertFalse(all.reads.get(0).getValue(), "a release checksum is immutable");

    MapLookup noSha512 = new MapLookup().body(jar + ".sha1", SHA1).body(jar + ".sha256", SHA256);
    assertEquals(new FetchSource(jar, new Digest("sha256", SHA256)), source("g/a/1/a-1.jar", noSha512));
    assertEquals(List.of(jar + ".sha512", jar + ".sha256"), noSha512.reads.stream().map(r -> r.getKey().url()).toList());

    // a stronger checksum that is not a digest of its kind falls back to the next weaker
    MapLookup badSha512 = new MapLookup().body(jar + ".sha512", SHA1).body(jar + ".sha256", SHA256);
    assertEquals(new FetchSource(jar, new Digest("sha256", SHA256)), source("g/a/1/a-1.jar", badSha512));
    MapLookup badBoth = new MapLookup().body(jar + ".sha512", "<html/>").body(jar + ".sha256", SHA1).body(jar + ".sha1", SHA1);
    assertEquals(new FetchSource(jar, new Digest("sha1", SHA1)), source("g/a/1/a-1.jar", badBoth));
  }

  @Test
  void checksumFilesParseByTheirAlgorithmsLength() {
    assertEquals(Optional.of(new Digest("sha512", SHA512)),
        MavenRepository.parseChecksum("sha512", ByteString.fromString(SHA512 + "  a-1.jar\n")));
    assertEquals(Optional.of(new Digest("sha256", SHA256)), MavenRepository.parseChecksum("sha256", ByteString.fromString(SHA256)));
    assertEquals(Optional.empty(), MavenRepository.parseChecksum("sha512", ByteString.fromString(SHA256)));
    assertEquals(Optional.empty(), MavenRepository.parseChecksum("sha256", ByteString.fromString(SHA1)));
    assertEquals(Optional.empty(), MavenRepository.parseChecksum("sha256", ByteString.fromString(SHA256 + "0")));
    assertEquals(Optional.empty(), MavenRepository.parseChecksum("md5", ByteString.fromString(SHA1.substring(0, 32))));
  }

  @Test
  void anUnreadableChecksumFailsTheFetchNotTheResolve() {
    MapLookup lookup = new MapLookup();
    lookup.failing.put(UP + "/g/a/1/a-1.jar.sha1", true);
    ArtifactKey plain = ArtifactKey.of("m2", UP + "/g/a/1/a-1.jar");
    // a copy already held is a hit on this key: resolving never needs the checksum
    assertEquals(Target.Artifact.immutable(plain), resolve("g/a/1/a-1.jar", lookup));
    CompletionException e = org.junit.jupiter.api.Assertions.assertThrows(CompletionException.class,
        () -> repo.source(plain, lookup).toCompletableFuture().join());
    assertInstanceOf(Lookup.LookupFailed.class, e.getCause());
  }

  @Test
  void metadataIsServedMutableWithoutAnyLookup() {
    MapLookup lookup = new MapLookup();
    Target t = resolve("g/a/maven-metadata.xml", lookup);
    assertEquals(new Target.Artifact(ArtifactKey.of("m2", UP + "/g/a/maven-metadata.xml"), true, Optional.empty(), List.of()), t);
    assertTrue(lookup.reads.isEmpty());
  }

  @Test
  void metadataChecksumsAreComputedFromTheCachedMetadata() {
    String xml = "<metadata><versioning><latest>1.1</latest></versioning></metadata>";
    MapLookup lookup = new MapLookup().body(UP + "/g/a/maven-metadata.xml", xml);
    Target.Answer sha1 = (Target.Answer) resolve("g/a/maven-metadata.xml.sha1", lookup);
    assertEquals(200, sha1.status());
    assertEquals(MavenRepository.hex("sha1", ByteString.fromString(xml)), sha1.body().utf8String());
    assertEquals(40, sha1.body().utf8String().length());
    assertEquals(ArtifactKey.of("m2", UP + "/g/a/maven-metadata.xml"), lookup.reads.get(0).getKey());
    assertTrue(lookup.reads.get(0).getValue(), "the metadata is read as mutable");
    Target.Answer sha512 = (Target.Answer) resolve("g/a/maven-metadata.xml.sha512", lookup);
    assertEquals(128, sha512.body().utf8String().length());
    Target.Answer md5 = (Target.Answer) resolve("g/a/maven-metadata.xml.md5", lookup);
    assertEquals(32, md5.body().utf8String().length());
  }

  @Test
  void checksumOfMissingMetadataIsNotFound() {
    assertInstanceOf(Target.NotFound.class, resolve("g/a/maven-metadata.xml.sha1", new MapLookup()));
  }

  @Test
  void queryIsNotPartOfTheKey() {
    RepoRequest r = new RepoRequest(List.of("g", "a", "maven-metadata.xml"), "/g/a/maven-metadata.xml",
        Optional.of("x=1"), Optional.empty(), "http://127.0.0.1:8080/m2");
    Target t = repo.resolve(r, new MapLookup()).toCompletableFuture().join();
    assertEquals(UP + "/g/a/maven-metadata.xml", ((Target.Artifact) t).key().url());
    assertNull(((Target.Artifact) t).key().expected());
  }
}
