package dev.corral.registry.npm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.download.FetchSource;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.upstream.Header;
import dev.corral.registry.CachingLookup;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class NpmRepositoryTest {
  static final String ROOT = "http://127.0.0.1:9/registry";
  static final String BASE = "http://127.0.0.1:8080/npm";
  static final String CORGI = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*";

  final NpmRepository repo = new NpmRepository("npm", ROOT + "/");
  final CachingLookup lookup = new CachingLookup();

  Target resolve(String accept, String... segments) {
    RepoRequest r = new RepoRequest(List.of(segments), "/unused", Optional.empty(), Optional.ofNullable(accept), BASE);
    return repo.resolve(r, lookup).toCompletableFuture().join();
  }

  Target.Artifact artifact(String accept, String... segments) {
    return assertInstanceOf(Target.Artifact.class, resolve(accept, segments));
  }

  @Test
  void packumentIsMutableWithVaryAndTheFullVariantByDefault() {
    Target.Artifact a = artifact("application/json", "demo-pkg");
    assertEquals(new ArtifactKey("npm", ROOT + "/demo-pkg", NpmRepository.FULL, null), a.key());
    assertTrue(a.mutable());
    assertTrue(a.rewrite().isPresent());
    assertEquals(List.of(new Header("Vary", "Accept")), a.headers());
    assertEquals(NpmRepository.FULL, artifact(null, "demo-pkg").key().variant());
    assertEquals(NpmRepository.FULL, artifact("*/*", "demo-pkg").key().variant());
    assertEquals(NpmRepository.FULL, artifact(";;, ;q=x", "demo-pkg").key().variant(), "a garbled Accept");
  }

  @Test
  void abbreviatedVariantOnlyWhenTheClientPrefersIt() {
    assertEquals(NpmRepository.ABBREVIATED, artifact(CORGI, "demo-pkg").key().variant());
    assertEquals(NpmRepository.ABBREVIATED, artifact("application/vnd.npm.install-v1+json", "demo-pkg").key().variant());
    assertEquals(NpmRepository.FULL,
        artifact("application/vnd.npm.install-v1+json; q=0.5, application/json", "demo-pkg").key().variant());
    assertEquals(NpmRepository.FULL,
        artifact("application/vnd.npm.install-v1+json;q=0, */*", "demo-pkg").key().variant());
    // the two variants are two keys of one URL
    ArtifactKey corgi = artifact(CORGI, "demo-pkg").key();
    ArtifactKey full = artifact("application/json", "demo-pkg").key();
    assertEquals(corgi.url(), full.url());
    assertFalse(corgi.id().equals(full.id()));
  }

  @Test
  void scopedNamesInBothSpellingsAreOneKeyWithTheSlashEncodedUpstream() {
    ArtifactKey twoSegments = artifact("application/json", "@demo", "scoped").key();
    ArtifactKey encoded = artifact("application/json", "@demo/scoped").key();
    assertEquals(twoSegments, encoded);
    assertEquals(ROOT + "/@demo%2Fscoped", encoded.url());
    assertTrue(repo.allowsEncodedSlash());
  }

  @Test
  void tarballWithoutACachedPackumentUsesTheStandardPathAndNoDigest() {
    Target.Artifact a = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz");
    assertEquals(ArtifactKey.of("npm", ROOT + "/demo-pkg/-/demo-pkg-1.0.0.tgz"), a.key());
    assertFalse(a.mutable());
    assertTrue(a.rewrite().isEmpty());
    Target.Artifact scoped = artifact("*/*", "@demo", "scoped", "-", "scoped-1.0.0.tgz");
    assertEquals(ArtifactKey.of("npm", ROOT + "/@demo/scoped/-/scoped-1.0.0.tgz"), scoped.key());
    assertEquals(scoped.key(), artifact("*/*", "@demo/scoped", "-", "scoped-1.0.0.tgz").key());
    assertTrue(lookup.bodyCalls.isEmpty(), "a tarball never fetches its packument");
  }

  FetchSource source(ArtifactKey key) {
    return repo.source(key, lookup).toCompletableFuture().join();
  }

  @Test
  void tarballKeyIsTheSameWhateverTheNodeHolds() throws Exception {
    // K1: a node holding the packument (either variant, any version of it) and a node holding
    // none make the same key for the same tarball, and that key carries no digest.
    byte[] tgz = "tarball bytes".getBytes(StandardCharsets.UTF_8);
    String sri = "sha512-" + Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(tgz));
    ArtifactKey bare = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz").key();
    lookup.cache(repo.packumentKey("demo-pkg", NpmRepository.FULL),
        packument("demo-pkg", ROOT + "/demo-pkg/-/demo-pkg-1.0.0.tgz", sri, "0".repeat(40)));
    ArtifactKey holdingFull = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz").key();
    lookup.cache(repo.packumentKey("demo-pkg", NpmRepository.ABBREVIATED),
        packument("demo-pkg", "http://127.0.0.2:7/elsewhere/demo-pkg-1.0.0.tgz", null, "a".repeat(40)));
    ArtifactKey holdingAnOlderAbbreviated = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz").key();
    assertEquals(ArtifactKey.of("npm", ROOT + "/demo-pkg/-/demo-pkg-1.0.0.tgz"), bare);
    assertEquals(bare, holdingFull);
    assertEquals(bare, holdingAnOlderAbbreviated);
    assertEquals(bare.id(), holdingFull.id());
    assertTrue(lookup.bodyCalls.isEmpty(), "resolving a tarball fetches nothing");
  }

  @Test
  void tarballSourceTakesUrlAndSha512FromThePackumentReadThroughTheCache() throws Exception {
    byte[] tgz = "tarball bytes".getBytes(StandardCharsets.UTF_8);
    String sri = "sha512-" + Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(tgz));
    String cdn = "http://127.0.0.2:7/files/demo-pkg-1.0.0.tgz";
    // nothing held: the full packument (what npm asks for), read through the cache
    ArtifactKey packument = repo.packumentKey("demo-pkg", NpmRepository.FULL);
    lookup.upstream(packument, packument("demo-pkg", cdn, sri, "0".repeat(40)));
    ArtifactKey key = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz").key();
    FetchSource s = source(key);
    assertEquals(cdn, s.url());
    assertEquals(new Digest("sha512", HexFormat.of().formatHex(MessageDigest.getInstance("SHA-512").digest(tgz))),
        s.expected());
    assertEquals(List.of(packument), lookup.bodyCalls, "the packument is read through the cache");
    // a file the packument does not name: the canonical URL, unverified
    ArtifactKey other = artifact("*/*", "demo-pkg", "-", "demo-pkg-9.9.9.tgz").key();
    assertEquals(new FetchSource(ROOT + "/demo-pkg/-/demo-pkg-9.9.9.tgz", null), source(other));
    // a package the upstream does not have: the same
    ArtifactKey none = artifact("*/*", "@demo", "gone", "-", "gone-1.0.0.tgz").key();
    assertEquals(new FetchSource(ROOT + "/@demo/gone/-/gone-1.0.0.tgz", null), source(none));
    // packuments and keys that are not this repository's tarballs: as keyed
    ArtifactKey full = repo.packumentKey("demo-pkg", NpmRepository.FULL);
    assertEquals(new FetchSource(full.url(), null), source(full));
    Digest named = new Digest("sha256", "ab".repeat(32));
    ArtifactKey byDigest = new ArtifactKey("npm", key.url(), "", named);
    assertEquals(new FetchSource(key.url(), named), source(byDigest), "a digest the key names is kept");
  }

  @Test
  void tarballSourceFailsWhenThePackumentCannotBeRead() {
    Lookup down = new Lookup() {
      @Override
      public java.util.concurrent.CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
        return java.util.concurrent.CompletableFuture.failedFuture(new LookupFailed(504, "upstream down"));
      }

      @Override
      public Optional<ByteString> cached(ArtifactKey key) {
        return Optional.empty();
      }
    };
    ArtifactKey key = artifact("*/*", "demo-pkg", "-", "demo-pkg-1.0.0.tgz").key();
    var e = org.junit.jupiter.api.Assertions.assertThrows(java.util.concurrent.CompletionException.class,
        () -> repo.source(key, down).toCompletableFuture().join());
    assertInstanceOf(Lookup.LookupFailed.class, e.getCause());
  }

  @Test
  void tarballSourceReadsTheAbbreviatedPackumentWhenThatIsTheOneHeld() {
    String sha1 = "AABBCCDDEEFF00112233445566778899AABBCCDD";
    ArtifactKey abbreviated = repo.packumentKey("@demo/scoped", NpmRepository.ABBREVIATED);
    lookup.cache(abbreviated, packument("@demo/scoped", ROOT + "/@demo/scoped/-/scoped-1.0.0.tgz", null, sha1));
    ArtifactKey key = artifact("*/*", "@demo", "scoped", "-", "scoped-1.0.0.tgz").key();
    assertEquals(new Digest("sha1", sha1.toLowerCase()), source(key).expected());
    assertEquals(List.of(abbreviated), lookup.bodyCalls, "through the cache (a held copy, revalidated when stale)");
  }

  @Test
  void tarballSourceUsesShasumWhenThatIsAllThereIs() {
    String sha1 = "AABBCCDDEEFF00112233445566778899AABBCCDD";
    lookup.upstream(repo.packumentKey("@demo/scoped", NpmRepository.FULL),
        packument("@demo/scoped", ROOT + "/@demo/scoped/-/scoped-1.0.0.tgz", null, sha1));
    ArtifactKey key = artifact("*/*", "@demo", "scoped", "-", "scoped-1.0.0.tgz").key();
    assertEquals(new Digest("sha1", sha1.toLowerCase()), source(key).expected());
  }

  @Test
  void sriDigestsConvertToHexAndTheStrongestCheckableOneWins() throws Exception {
    byte[] data = "hello".getBytes(StandardCharsets.UTF_8);
    String b512 = Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-512").digest(data));
    String b256 = Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-256").digest(data));
    String hex512 = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-512").digest(data));
    assertEquals(Optional.of(new Digest("sha512", hex512)), NpmPackument.expected("sha512-" + b512, null));
    assertEquals(Optional.of(new Digest("sha512", hex512)),
        NpmPackument.expected("sha256-" + b256 + " sha512-" + b512 + "?opt sha384-xyz", null));
    assertEquals("sha256", NpmPackument.expected("sha384-AAAA sha256-" + b256, null).get().algorithm());
    // broken integrity falls back to shasum; broken both: none
    String sha1 = "aabbccddeeff00112233445566778899aabbccdd";
    assertEquals(Optional.of(new Digest("sha1", sha1)), NpmPackument.expected("sha512-!!notbase64", sha1));
    assertEquals(Optional.of(new Digest("sha1", sha1)), NpmPackument.expected("sha512-" + b256, sha1)); // wrong length
    assertEquals(Optional.empty(), NpmPackument.expected("md5-abc", "xyz"));
    assertEquals(Optional.empty(), NpmPackument.expected(null, null));
  }

  @Test
  void rewritePointsEveryVersionTarballAtCorralAndKeepsTheRest() throws Exception {
    String body = """
        {"_id":"@demo/scoped","name":"@demo/scoped","tarball":"http://127.0.0.1:9/top-level-untouched.tgz",
         "dist-tags":{"latest":"1.1.0"},"big":12345678901234567890123,"float":1.50,"readme":"caf\\u00e9 \u2603",
         "versions":{
           "1.0.0":{"name":"@demo/scoped","version":"1.0.0","dist":{"tarball":"http://127.0.0.1:9/registry/@demo/scoped/-/scoped-1.0.0.tgz","shasum":"aa","integrity":"sha512-x"}},
           "1.1.0":{"dist":{"tarball":"https://127.0.0.2/cdn/download?id=7"},"deps":[{"tarball":"http://127.0.0.3/y.tgz"}]}},
         "time":{"1.0.0":"2026-01-01T00:00:00.000Z"}}
        """;
    ByteString out = NpmPackument.rewrite(ByteString.fromString(body, StandardCharsets.UTF_8), "@demo/scoped", BASE);
    JsonNode in = new ObjectMapper().readTree(body);
    JsonNode doc = new ObjectMapper().readTree(out.toArray());
    assertEquals(BASE + "/@demo/scoped/-/scoped-1.0.0.tgz", doc.at("/versions/1.0.0/dist/tarball").asText());
    // no plain file name in the upstream URL: <name>-<version>.tgz
    assertEquals(BASE + "/@demo/scoped/-/scoped-1.1.0.tgz", doc.at("/versions/1.1.0/dist/tarball").asText());
    assertEquals("http://127.0.0.1:9/top-level-untouched.tgz", doc.get("tarball").asText());
    assertEquals("http://127.0.0.3/y.tgz", doc.at("/versions/1.1.0/deps/0/tarball").asText());
    assertEquals("café ☃", doc.get("readme").asText());
    assertTrue(out.utf8String().contains("12345678901234567890123"), "big numbers copied as written");
    assertTrue(out.utf8String().contains("1.50"), "numbers copied as written");
    ((com.fasterxml.jackson.databind.node.ObjectNode) in.at("/versions/1.0.0/dist")).put("tarball", "x");
    ((com.fasterxml.jackson.databind.node.ObjectNode) doc.at("/versions/1.0.0/dist")).put("tarball", "x");
    ((com.fasterxml.jackson.databind.node.ObjectNode) in.at("/versions/1.1.0/dist")).put("tarball", "x");
    ((com.fasterxml.jackson.databind.node.ObjectNode) doc.at("/versions/1.1.0/dist")).put("tarball", "x");
    assertEquals(in, doc, "nothing else changes");

    // every rewritten URL resolves back (in the fetch) to the upstream URL the packument named
    lookup.cache(repo.packumentKey("@demo/scoped", NpmRepository.FULL), body);
    assertEquals("https://127.0.0.2/cdn/download?id=7",
        source(artifact("*/*", "@demo", "scoped", "-", "scoped-1.1.0.tgz").key()).url());
  }

  @Test
  void rewriteLeavesWhatIsNotAPackumentAsItIs() {
    for (String s : List.of("not json", "{\"versions\": [1, 2", "[{\"versions\":{}}]", "")) {
      ByteString in = ByteString.fromString(s, StandardCharsets.UTF_8);
      assertEquals(in, NpmPackument.rewrite(in, "demo-pkg", BASE));
    }
  }

  @Test
  void rewriteIsAFunctionOfTheBaseUrl() {
    ByteString stored = ByteString.fromString(packument("demo-pkg", ROOT + "/demo-pkg/-/demo-pkg-1.0.0.tgz", null, null),
        StandardCharsets.UTF_8);
    Target.Artifact a = artifact("application/json", "demo-pkg");
    assertTrue(a.rewrite().get().rewrite(stored).utf8String().contains(BASE + "/demo-pkg/-/demo-pkg-1.0.0.tgz"));
    RepoRequest other = new RepoRequest(List.of("demo-pkg"), "/demo-pkg", Optional.empty(), Optional.empty(),
        "https://127.0.0.4:8443/n");
    Target.Artifact b = (Target.Artifact) repo.resolve(other, lookup).toCompletableFuture().join();
    String served = b.rewrite().get().rewrite(stored).utf8String();
    assertTrue(served.contains("https://127.0.0.4:8443/n/demo-pkg/-/demo-pkg-1.0.0.tgz"), served);
  }

  @Test
  void hostileOrUnknownPathsAreRejectedOrNotFound() {
    assertInstanceOf(Target.NotFound.class, resolve(null, "-", "v1", "search"));
    assertInstanceOf(Target.NotFound.class, resolve(null, "-", "npm", "v1", "security", "advisories", "bulk"));
    assertInstanceOf(Target.NotFound.class, resolve(null, "@demo"));
    assertInstanceOf(Target.NotFound.class, resolve(null, "demo-pkg", "1.0.0"));
    assertInstanceOf(Target.NotFound.class, resolve(null, "demo-pkg", "-", "demo-pkg-1.0.0.tar"));
    assertInstanceOf(Target.NotFound.class, resolve(null, "demo-pkg", "-", ".hidden.tgz"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "a/b"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "@demo/x/y"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "demo-pkg", "-", "x/../y.tgz"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "has space"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "@/x"));
    assertInstanceOf(Target.Rejected.class, resolve(null, "x".repeat(215)));
    assertInstanceOf(Target.Rejected.class, resolve(null, ".dotfile"));
  }

  static String packument(String name, String tarball, String integrity, String shasum) {
    String dist = "\"tarball\":\"" + tarball + "\""
        + (integrity == null ? "" : ",\"integrity\":\"" + integrity + "\"")
        + (shasum == null ? "" : ",\"shasum\":\"" + shasum + "\"");
    return "{\"name\":\"" + name + "\",\"versions\":{\"1.0.0\":{\"name\":\"" + name
        + "\",\"version\":\"1.0.0\",\"dist\":{" + dist + "}}}}";
  }

}
