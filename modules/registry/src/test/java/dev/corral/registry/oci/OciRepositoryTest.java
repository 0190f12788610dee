package dev.corral.registry.oci;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.registry.MapLookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class OciRepositoryTest {
  private static final String UP = "http://127.0.0.1:9/";
  private static final String HEX = "0123456789abcdef".repeat(4);

  private final OciRepository repo = new OciRepository("images", UP);
  private final OciRepository hub = new OciRepository("hub", UP, Optional.of("library"), false);

  private static Target resolve(OciRepository repo, String path, String query, String accept) {
    RepoRequest r = new RepoRequest(List.of(path.split("/", -1)), "/" + path, Optional.ofNullable(query),
        Optional.ofNullable(accept), "http://127.0.0.1:8080/v2/images");
    return repo.resolve(r, new MapLookup()).toCompletableFuture().join();
  }

  private static ArtifactKey key(Target t) {
    return assertInstanceOf(Target.Artifact.class, t).key();
  }

  @Test
  void aBlobIsKeyedByItsUrlAndDigestWhateverTheCasing() {
    ArtifactKey lower = key(resolve(repo, "team/app/blobs/sha256:" + HEX, null, null));
    assertEquals("http://127.0.0.1:9/v2/team/app/blobs/sha256:" + HEX, lower.url());
    assertEquals(new Digest("sha256", HEX), lower.expected());
    assertEquals("", lower.variant());
    assertFalse(((Target.Artifact) resolve(repo, "team/app/blobs/sha256:" + HEX, null, null)).mutable());
    ArtifactKey upper = key(resolve(repo, "team/app/blobs/sha256:" + HEX.toUpperCase(), null, null));
    assertEquals(lower, upper);
    // The same layer under another image is another key: access is granted per image upstream.
    assertFalse(lower.equals(key(resolve(repo, "other/app/blobs/sha256:" + HEX, null, null))));
  }

  @Test
  void aManifestByDigestIsOneKeyForEveryAccept() {
    ArtifactKey a = key(resolve(repo, "app/manifests/sha512:" + HEX + HEX, null, "application/vnd.oci.image.index.v1+json"));
    ArtifactKey b = key(resolve(repo, "app/manifests/sha512:" + HEX + HEX, null, null));
    assertEquals(a, b);
    assertEquals("sha512", a.expected().algorithm());
    assertEquals(String.join(", ", OciRepository.MANIFEST_TYPES), a.variant());
  }

  @Test
  void aManifestByTagIsMutableAndKeyedByTheAcceptedTypes() {
    Target.Artifact t = assertInstanceOf(Target.Artifact.class, resolve(repo, "app/manifests/v1.2_3-rc", null,
        "application/vnd.docker.distribution.manifest.v2+json, application/json"));
    assertTrue(t.mutable());
    assertNull(t.key().expected());
    assertEquals("application/vnd.docker.distribution.manifest.v2+json", t.key().variant());
    assertEquals(String.join(", ", OciRepository.MANIFEST_TYPES), OciRepository.variant(Optional.empty()));
    assertEquals(String.join(", ", OciRepository.MANIFEST_TYPES), OciRepository.variant(Optional.of("*/*")));
    assertEquals(String.join(", ", OciRepository.MANIFEST_TYPES), OciRepository.variant(Optional.of("text/html")));
    assertEquals("application/vnd.oci.image.index.v1+json", OciRepository.variant(Optional.of(
        "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json; q=0")));
  }

  @Test
  void nameGrammar() {
    for (String ok : List.of("a", "a/b/c", "a.b", "a_b", "a__b", "a-b", "a--b", "0", "library/alpine")) {
      assertTrue(OciReference.isName(List.of(ok.split("/"))), ok);
    }
    for (String bad : List.of("A", "a/", "-a", "a-", "a..b", "a___b", ".a", "a_", "a b", "a%2fb", "")) {
      assertFalse(OciReference.isName(List.of(bad.split("/", -1))), bad);
    }
    assertTrue(OciReference.isName(List.of("a".repeat(255))));
    assertFalse(OciReference.isName(List.of("a".repeat(200), "b".repeat(55))));
  }

  @Test
  void tagsAndDigests() {
    assertTrue(OciReference.isTag("latest"));
    assertTrue(OciReference.isTag("_x"));
    assertTrue(OciReference.isTag("a".repeat(128)));
    assertFalse(OciReference.isTag("a".repeat(129)));
    assertFalse(OciReference.isTag(".x"));
    assertFalse(OciReference.isTag("-x"));
    assertTrue(OciReference.digest("sha256:" + HEX).isPresent());
    assertFalse(OciReference.digest("sha256:" + HEX.substring(1)).isPresent());
    assertFalse(OciReference.digest("sha256:" + HEX + "0").isPresent());
    assertFalse(OciReference.digest("sha1:" + HEX.substring(0, 40)).isPresent());
    assertFalse(OciReference.digest("sha256:" + HEX.replace('a', 'g')).isPresent());
  }

  @Test
  void theSingleNameNamespaceAppliesToOnePartNamesOnly() {
    assertEquals("http://127.0.0.1:9/v2/library/alpine/manifests/3", key(resolve(hub, "alpine/manifests/3", null, null)).url());
    assertEquals(key(resolve(hub, "alpine/manifests/3", null, null)), key(resolve(hub, "library/alpine/manifests/3", null, null)));
    assertEquals("http://127.0.0.1:9/v2/team/app/manifests/3", key(resolve(hub, "team/app/manifests/3", null, null)).url());
    assertEquals("http://127.0.0.1:9/v2/alpine/manifests/3", key(resolve(repo, "alpine/manifests/3", null, null)).url());
    assertThrows(IllegalArgumentException.class, () -> new OciRepository("x", UP, Optional.of("Lib"), false));
  }

  @Test
  void tagsListPagingIsCanonical() {
    assertEquals("http://127.0.0.1:9/v2/app/tags/list?n=5&last=v1",
        key(resolve(repo, "app/tags/list", "last=v1&n=05", null)).url());
    assertEquals("http://127.0.0.1:9/v2/app/tags/list", key(resolve(repo, "app/tags/list", null, null)).url());
    for (String bad : List.of("n=5&n=6", "n=100000", "last=..", "x=1", "n=-1")) {
      assertInstanceOf(Target.Rejected.class, resolve(repo, "app/tags/list", bad, null), bad);
    }
  }

  @Test
  void whatIsNotServedIsNotFoundAndWhatIsMalformedIsRejected() {
    assertInstanceOf(Target.NotFound.class, resolve(repo, "app/uploads", null, null));
    assertInstanceOf(Target.NotFound.class, resolve(repo, "_catalog", null, null));
    assertInstanceOf(Target.NotFound.class, resolve(repo, "app/referrers/sha256:" + HEX, null, null));
    assertInstanceOf(Target.Rejected.class, resolve(repo, "app/blobs/latest", null, null));
    assertInstanceOf(Target.Rejected.class, resolve(repo, "App/manifests/latest", null, null));
    assertInstanceOf(Target.Rejected.class, resolve(repo, "app/manifests/sha256:xyz", null, null));
    assertInstanceOf(Target.Rejected.class, resolve(repo, "app/manifests/latest", "x=1", null));
  }
}
