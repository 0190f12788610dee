package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The OCI test kit on its own, without Corral: a real {@code docker-registry} ({@link OciRegistry}),
 * a three-layer image written as an OCI layout ({@link OciImage}), pushed with the real
 * {@code skopeo} and copied back to a {@code dir:} byte for byte ({@link Skopeo}), and pulled with
 * the real {@code podman} through a registries.conf whose mirror is the registry itself, without
 * and with a {@code /NAME} path ({@link Podman}); the registry's access log shows the requests each
 * client made. The end-to-end tests of the {@code oci} repository type put Corral where the
 * mirror is here.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OciToolsIT {
  static final String REPO = "corral/demo";
  /** The fake upstream name podman is told to mirror: never resolved, its fallback is loopback. */
  static final String UPSTREAM = "upstream.invalid";

  private Path dir;
  private OciRegistry registry;
  private OciImage image;
  private Skopeo skopeo;
  private Podman podman;

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    registry = OciRegistry.start(dir.resolve("registry"));
    image = OciImage.builder()
        .layer(1000, 5000)
        .layer(64 * 1024)
        .layer(300 * 1024, 7)
        .tag("v1").tag("latest").index("multi")
        .write(dir.resolve("layout"));
    skopeo = Skopeo.create(dir.resolve("skopeo"));
    podman = Podman.create(dir.resolve("podman")).mirror(UPSTREAM, registry.hostPort());
    skopeo.push(image, registry.hostPort() + "/" + REPO);
    skopeo.push(image, image.tag(), registry.hostPort() + "/cache/" + REPO + ":" + image.tag());
  }

  @AfterAll
  void stop() throws Exception {
    if (podman != null) {
      podman.close();
    }
    if (registry != null) {
      registry.close();
    }
  }

  @Test
  @Order(1)
  void skopeoCopiesThePushedImageBackByteForByte() throws Exception {
    int before = registry.requests().size();
    Path copy = skopeo.copyToDir(registry.hostPort() + "/" + REPO + ":v1");
    Skopeo.assertSameBlobs(image, copy);
    List<OciRegistry.Request> pull = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(pull, "GET", "/v2/" + REPO + "/manifests/v1"), pull.toString());
    assertEveryBlobOnce(pull, REPO, image.blobs().subList(1, image.blobs().size()));
  }

  @Test
  @Order(2)
  void podmanPullsThroughAMirrorAtTheRegistryRoot() throws Exception {
    int before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    List<OciRegistry.Request> pull = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(pull, "GET", "/v2/" + REPO + "/manifests/v1"), pull.toString());
    assertEveryBlobOnce(pull, REPO, image.blobs().subList(1, image.blobs().size()));
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":v1", image.manifest().digest());
  }

  @Test
  @Order(3)
  void aPullWithTheImageInTheStoreAsksNoLayerAndAFreshStoreAsksEveryBlobAgain() throws Exception {
    int before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    List<OciRegistry.Request> again = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(again, "GET", "/v2/" + REPO + "/manifests/v1"), again.toString());
    assertEquals(1, OciRegistry.count(again, "GET", "/v2/" + REPO + "/blobs/" + image.config().digest()),
        "podman 4.3 reads the config again: " + again);
    for (OciImage.Layer layer : image.layers()) {
      assertEquals(0, OciRegistry.count(again, "GET", "/v2/" + REPO + "/blobs/" + layer.blob().digest()),
          "a layer in the store is not asked again: " + again);
    }

    podman.freshStore();
    assertEquals(List.of(), podman.images(), "a fresh store is empty");
    before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    assertEveryBlobOnce(registry.requestsSince(before), REPO, image.blobs().subList(1, image.blobs().size()));
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":v1", image.manifest().digest());
  }

  @Test
  @Order(4)
  void aMirrorWithANamePathIsAskedUnderThatName() throws Exception {
    try (Podman named = Podman.create(dir.resolve("podman-named")).mirror(UPSTREAM, registry.hostPort() + "/cache")) {
      int before = registry.requests().size();
      named.pull(UPSTREAM + "/" + REPO + ":v1").ok();
      List<OciRegistry.Request> pull = registry.requestsSince(before);
      assertEquals(1, OciRegistry.count(pull, "GET", "/v2/cache/" + REPO + "/manifests/v1"), pull.toString());
      assertEveryBlobOnce(pull, "cache/" + REPO, image.blobs().subList(1, image.blobs().size()));
      Podman.assertSameLayers(image, named.saveUncompressed(UPSTREAM + "/" + REPO + ":v1"));
    }
  }

  @Test
  @Order(5)
  void theIndexTagResolvesToThePlatformManifest() throws Exception {
    podman.freshStore();
    int before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":multi", "--platform", "linux/amd64").ok();
    List<OciRegistry.Request> pull = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(pull, "GET", "/v2/" + REPO + "/manifests/multi"), pull.toString());
    assertEquals(1, OciRegistry.count(pull, "GET", "/v2/" + REPO + "/manifests/" + image.manifest().digest()),
        pull.toString());
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":multi", image.index().orElseThrow().digest());
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /** Each blob was asked exactly once with a GET answered 200, and nothing else but the version check and manifests. */
  private static void assertEveryBlobOnce(List<OciRegistry.Request> pull, String repo, List<OciImage.Blob> blobs) {
    List<OciRegistry.Request> other = new ArrayList<>(pull);
    for (OciImage.Blob blob : blobs) {
      String path = "/v2/" + repo + "/blobs/" + blob.digest();
      assertEquals(1, OciRegistry.count(pull, "GET", path), path + " in " + pull);
      other.removeIf(r -> r.is("GET", path) && r.status() == 200 && r.bytes() == blob.size());
    }
    other.removeIf(r -> r.method().equals("GET")
        && (r.path().equals("/v2/") || r.path().startsWith("/v2/" + repo + "/manifests/")) && r.status() == 200);
    assertEquals(List.of(), other, "requests other than the version check, manifests and one GET per blob");
  }
}
