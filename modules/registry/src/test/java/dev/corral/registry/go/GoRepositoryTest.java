package dev.corral.registry.go;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.registry.MapLookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class GoRepositoryTest {
  private static final String UP = "http://127.0.0.1:9/goproxy";
  private static final String DB = "http://127.0.0.1:7/";

  private final GoRepository plain = new GoRepository("go", UP + "/");
  private final GoRepository withDb = new GoRepository("go", UP, Optional.of(DB));

  private static GoRepository.Kind kind(GoRepository repo, String path) {
    return repo.classify(List.of(path.split("/")), false);
  }

  private Target resolve(GoRepository repo, String path) {
    RepoRequest r = new RepoRequest(List.of(path.split("/")), "/" + path, Optional.empty(), Optional.empty(), "http://127.0.0.1:8080/go");
    return repo.resolve(r, new MapLookup()).toCompletableFuture().join();
  }

  private static GoRepository.Kind.Fetch fetch(String path, boolean mutable) {
    return new GoRepository.Kind.Fetch(path, mutable, false);
  }

  @Test
  void listAndLatestAreMutable() {
    assertEquals(fetch("example.com/demo/@v/list", true), kind(plain, "example.com/demo/@v/list"));
    assertEquals(fetch("example.com/demo/@latest", true), kind(plain, "example.com/demo/@latest"));
  }

  @Test
  void canonicalVersionFilesAreImmutable() {
    for (String f : List.of("v1.0.0.info", "v1.0.0.mod", "v1.0.0.zip", "v0.0.0-20260101120000-abcdefabcdef.zip",
        "v2.1.0+incompatible.mod", "v1.2.3-rc.1.info")) {
      assertEquals(fetch("example.com/demo/@v/" + f, false), kind(plain, "example.com/demo/@v/" + f), f);
    }
  }

  @Test
  void infoOfAQueryIsMutableButModAndZipNeedCanonicalVersions() {
    assertEquals(fetch("example.com/demo/@v/master.info", true), kind(plain, "example.com/demo/@v/master.info"));
    assertEquals(fetch("example.com/demo/@v/v1.0.info", true), kind(plain, "example.com/demo/@v/v1.0.info"));
    assertInstanceOf(GoRepository.Kind.Rejected.class, kind(plain, "example.com/demo/@v/master.zip"));
    assertInstanceOf(GoRepository.Kind.Rejected.class, kind(plain, "example.com/demo/@v/v1.0.mod"));
  }

  @Test
  void caseEncodedPathsAreKeptEncodedUpstream() {
    Target t = resolve(plain, "example.com/!upper/@v/v0.1.0.zip");
    assertEquals(Target.Artifact.immutable(ArtifactKey.of("go", UP + "/example.com/!upper/@v/v0.1.0.zip")), t);
    // A capital in a pre-release is encoded too, and still canonical.
    assertEquals(fetch("example.com/demo/@v/v1.0.0-!r!c1.zip", false), kind(plain, "example.com/demo/@v/v1.0.0-!r!c1.zip"));
    assertEquals("v1.0.0-RC1", GoRepository.decode("v1.0.0-!r!c1"));
    assertTrue(GoRepository.isCanonical("v1.0.0-!r!c1"));
  }

  @Test
  void invalidModulePathsAndVersionsAreRejected() {
    for (String p : List.of(
        "example.com/Upper/@v/list",          // capital letters must be encoded
        "Example.com/demo/@v/list",
        "example.com/a!/@v/list",             // '!' must be followed by a lower-case letter
        "example.com/a!1/@v/list",
        "examplecom/demo/@v/list",            // first element needs a dot
        "-example.com/demo/@v/list",
        "example.com/.hidden/@v/list",
        "example.com/trailing./@v/list",
        "example.com/a b/@v/list",
        "example.com/a:b/@v/list",
        "ex_ample.com/demo/@v/list",
        "example.com/demo/@v/V1.0.0.info",    // capital in a version
        "example.com/demo/@v/.info",
        "example.com/demo/@v/-v1.info",
        "example.com/demo/@v/v1.0.0;x.zip",
        "@v/list")) {
      assertInstanceOf(GoRepository.Kind.Rejected.class, kind(plain, p), p);
      assertInstanceOf(Target.Rejected.class, resolve(plain, p), p);
    }
  }

  @Test
  void otherPathsAreNotFound() {
    assertInstanceOf(GoRepository.Kind.NotFound.class, kind(plain, "example.com/demo"));
    assertInstanceOf(GoRepository.Kind.NotFound.class, kind(plain, "example.com/demo/@v/v1.0.0.tar"));
    assertInstanceOf(GoRepository.Kind.NotFound.class, kind(plain, "example.com/demo/@v"));
    assertInstanceOf(GoRepository.Kind.NotFound.class, plain.classify(List.of("example.com", "demo", "@v"), true));
  }

  @Test
  void sumdbIsNotFoundWithoutAConfiguredDatabase() {
    for (String p : List.of("sumdb/sum.example/supported", "sumdb/sum.example/latest",
        "sumdb/sum.example/lookup/example.com/demo@v1.0.0", "sumdb/127.0.0.1:7/supported")) {
      assertInstanceOf(Target.NotFound.class, resolve(plain, p), p);
    }
  }

  @Test
  void aConfiguredDatabaseIsProxiedUnderItsName() {
    assertInstanceOf(GoRepository.Kind.SumdbSupported.class, kind(withDb, "sumdb/127.0.0.1:7/supported"));
    Target.Answer supported = (Target.Answer) resolve(withDb, "sumdb/127.0.0.1:7/supported");
    assertEquals(200, supported.status());
    assertEquals(new GoRepository.Kind.Fetch("latest", true, true), kind(withDb, "sumdb/127.0.0.1:7/latest"));
    assertEquals(new GoRepository.Kind.Fetch("lookup/example.com/!upper@v0.1.0", false, true),
        kind(withDb, "sumdb/127.0.0.1:7/lookup/example.com/!upper@v0.1.0"));
    assertEquals(new GoRepository.Kind.Fetch("tile/8/0/x001/234.p/5", false, true),
        kind(withDb, "sumdb/127.0.0.1:7/tile/8/0/x001/234.p/5"));
    assertEquals(new GoRepository.Kind.Fetch("tile/8/data/000", false, true), kind(withDb, "sumdb/127.0.0.1:7/tile/8/data/000"));
    Target latest = resolve(withDb, "sumdb/127.0.0.1:7/latest");
    assertEquals(new Target.Artifact(ArtifactKey.of("go", "http://127.0.0.1:7/latest"), true, Optional.empty(), List.of()), latest);
    // Only the configured database, and only its paths.
    assertInstanceOf(GoRepository.Kind.NotFound.class, kind(withDb, "sumdb/sum.example/latest"));
    assertInstanceOf(GoRepository.Kind.NotFound.class, kind(withDb, "sumdb/127.0.0.1:7/anything"));
    assertInstanceOf(GoRepository.Kind.Rejected.class, kind(withDb, "sumdb/127.0.0.1:7/tile/8/0/../x"));
    assertInstanceOf(GoRepository.Kind.Rejected.class, kind(withDb, "sumdb/127.0.0.1:7/lookup/Example.com/x@v1.0.0"));
    assertInstanceOf(GoRepository.Kind.Rejected.class, kind(withDb, "sumdb/127.0.0.1:7/lookup/example.com/x"));
  }

  @Test
  void canonicalVersionGrammar() {
    assertTrue(GoRepository.isCanonical("v0.0.0"));
    assertTrue(GoRepository.isCanonical("v10.20.30-alpha.1"));
    assertFalse(GoRepository.isCanonical("v1.0"));
    assertFalse(GoRepository.isCanonical("1.0.0"));
    assertFalse(GoRepository.isCanonical("v01.0.0"));
    assertFalse(GoRepository.isCanonical("v1.0.0+build"));
  }
}
