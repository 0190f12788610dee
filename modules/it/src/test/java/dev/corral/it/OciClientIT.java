package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The oci repository type end to end (issue 15, done-when 1 and 4): a real registry (Debian's
 * {@code docker-registry}) holds a three-layer image pushed by {@code skopeo}; one Corral node
 * mirrors it as {@code images}; the real {@code skopeo copy} and {@code podman pull} (through a
 * registries.conf mirror entry {@code 127.0.0.1:PORT/images}) get byte-identical layers, and a
 * pull into an empty client store asks the registry nothing. A second repository reaches the same
 * registry through a proxy that flips one bit of every blob: every client gets an error, nothing
 * is kept, and the pull after the proxy heals succeeds. A third reaches it through a token-auth
 * front (done-when 3): the registry token flow with the repository's Basic credential, one token
 * per scope, and neither the token nor the password in the node's log. A fourth, with
 * {@code metadata-ttl = 0s}, revalidates a tag with a conditional request (the registry answers
 * 304) and follows it when the tag is pushed again.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class OciClientIT {
  static final String REPO = "corral/demo";
  static final String UPSTREAM = OciToolsIT.UPSTREAM;
  static final String PASSWORD = "pw-0f3a9c2e77";

  private Path dir;
  private OciRegistry registry;
  private RegistryProxy proxy;
  private RegistryProxy guard;
  private OciImage image;
  private Skopeo skopeo;
  private Podman podman;
  private CorralProcess node;
  private String corral; // 127.0.0.1:PORT

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    registry = OciRegistry.start(dir.resolve("registry"));
    proxy = new RegistryProxy(registry.base());
    guard = new RegistryProxy(registry.base()).requireTokens("mirror", PASSWORD);
    image = OciImage.builder()
        .layer(1000, 5000)
        .layer(64 * 1024)
        .layer(300 * 1024, 7)
        .tag("v1").tag("latest").index("multi")
        .write(dir.resolve("layout"));
    skopeo = Skopeo.create(dir.resolve("skopeo"));
    skopeo.push(image, registry.hostPort() + "/" + REPO);
    Path password = java.nio.file.Files.writeString(dir.resolve("registry-password"), PASSWORD + "\n");
    Path conf = java.nio.file.Files.writeString(dir.resolve("guarded.conf"), """
        corral.repos.guarded { type = oci, url = "%s",
          credentials { type = basic, username = mirror, password-file = "%s" } }
        corral.repos.fresh { type = oci, url = "%s", metadata-ttl = 0s, max-stale = 0s }
        """.formatted(guard.base(), password, registry.base()));
    skopeo.push(image, image.tag(), registry.hostPort() + "/corral/other:" + image.tag());
    node = CorralProcess.serve("oci-clients", List.of(), dir.resolve("data"), List.of("--config", conf.toString()),
        "images=oci:" + registry.base(), "flaky=oci:" + proxy.base());
    corral = node.awaitListening(Duration.ofSeconds(60)).replaceFirst("^http://", "");
    podman = Podman.create(dir.resolve("podman")).mirror(UPSTREAM, corral + "/images");
  }

  @AfterAll
  void stop() throws Exception {
    if (podman != null) {
      podman.close();
    }
    if (node != null) {
      node.close();
    }
    if (proxy != null) {
      proxy.close();
    }
    if (guard != null) {
      guard.close();
    }
    if (registry != null) {
      registry.close();
    }
  }

  @Test
  @Order(1)
  void skopeoCopiesThroughCorralByteForByteAndTheRegistryIsAskedEachThingOnce() throws Exception {
    int before = registry.requests().size();
    Path copy = skopeo.copyToDir(corral + "/images/" + REPO + ":v1");
    Skopeo.assertSameBlobs(image, copy);
    List<OciRegistry.Request> asked = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(asked, "GET", "/v2/" + REPO + "/manifests/v1"), asked.toString());
    for (OciImage.Blob blob : image.blobs().subList(1, image.blobs().size())) {
      assertEquals(1, OciRegistry.count(asked, "GET", "/v2/" + REPO + "/blobs/" + blob.digest()), blob + " " + asked);
    }
  }

  @Test
  @Order(2)
  void podmanPullsThroughCorralAsAMirrorAndAnEmptyStoreAsksTheRegistryNothing() throws Exception {
    podman.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":v1", image.manifest().digest());

    podman.freshStore();
    assertEquals(List.of(), podman.images(), "a fresh store is empty");
    int before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    assertEquals(List.of(), registry.requestsSince(before), "a pull into an empty store, everything cached: no upstream request");
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":v1", image.manifest().digest());
  }

  @Test
  @Order(3)
  void anIndexTagResolvesToThePlatformManifestThroughCorral() throws Exception {
    podman.freshStore();
    int before = registry.requests().size();
    podman.pull(UPSTREAM + "/" + REPO + ":multi", "--platform", "linux/amd64").ok();
    List<OciRegistry.Request> asked = registry.requestsSince(before);
    assertEquals(1, OciRegistry.count(asked, "GET", "/v2/" + REPO + "/manifests/multi"), asked.toString());
    podman.assertHolds(image, UPSTREAM + "/" + REPO + ":multi", image.index().orElseThrow().digest());
  }

  @Test
  @Order(4)
  void aBlobWithAWrongByteFailsEveryClientIsNotKeptAndThePullAfterTheUpstreamHealsSucceeds() throws Exception {
    proxy.flip(true);
    String source = corral + "/flaky/" + REPO + ":v1";
    List<CompletableFuture<ClientCommand.Result>> copies = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Skopeo client = Skopeo.create(dir.resolve("skopeo-flaky-" + i));
      Path out = dir.resolve("flaky-" + i);
      copies.add(CompletableFuture.supplyAsync(() -> {
        try {
          return client.run("copy", "--src-tls-verify=false", "docker://" + source, "dir:" + out);
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }));
    }
    for (CompletableFuture<ClientCommand.Result> copy : copies) {
      ClientCommand.Result result = copy.join();
      assertNotEquals(0, result.exit(), "a client got a layer with a wrong byte: " + result.output());
    }
    long blobsAsked = proxy.blobsAsked();
    assertTrue(blobsAsked > 0);
    // Nothing was kept: the next client's request goes upstream again, and fails again.
    assertNotEquals(0, skopeo.run("copy", "--src-tls-verify=false", "docker://" + source, "dir:" + dir.resolve("flaky-x")).exit());
    assertTrue(proxy.blobsAsked() > blobsAsked, "the bad blob was not kept: asked upstream again");

    proxy.flip(false);
    Skopeo.assertSameBlobs(image, skopeo.copyToDir(source));
  }

  @Test
  @Order(5)
  void aTokenAuthRegistryIsAskedWithOneTokenPerScopeThatNoLogShows() throws Exception {
    Skopeo.assertSameBlobs(image, skopeo.copyToDir(corral + "/guarded/" + REPO + ":v1"));
    // The manifest and four blobs went up with one token: only the first request met the 401.
    assertEquals(List.of("repository:" + REPO + ":pull"), guard.tokensGiven);
    Skopeo.assertSameBlobs(image, skopeo.copyToDir(corral + "/guarded/corral/other:v1"));
    assertEquals(List.of("repository:" + REPO + ":pull", "repository:corral/other:pull"), guard.tokensGiven);
    String log = node.output();
    for (String secret : guard.tokenValues) {
      assertFalse(log.contains(secret), "a token in the node's log");
    }
    assertFalse(log.contains(PASSWORD), "the password in the node's log");
    assertTrue(node.stdout().length() > 0);
  }

  @Test
  @Order(6)
  void aTagIsRevalidatedWithTheRegistryAndFollowsARetag() throws Exception {
    // The repository "fresh" has metadata-ttl = 0s and max-stale = 0s: every read of a tag waits
    // for the registry.
    skopeo.push(image, image.tag(), registry.hostPort() + "/corral/retag:v1");
    Skopeo.assertSameBlobs(image, skopeo.copyToDir(corral + "/fresh/corral/retag:v1"));
    int before = registry.requests().size();
    Skopeo.assertSameBlobs(image, skopeo.copyToDir(corral + "/fresh/corral/retag:v1"));
    List<OciRegistry.Request> again = registry.requestsSince(before);
    assertEquals(List.of("GET /v2/corral/retag/manifests/v1 304"),
        again.stream().map(r -> r.method() + " " + r.path() + " " + r.status()).toList(),
        "the tag asked again conditionally, nothing else: " + again);

    OciImage retagged = OciImage.builder().layer(2000, 3000).seed(99).tag("v1").write(dir.resolve("layout-2"));
    skopeo.push(retagged, "v1", registry.hostPort() + "/corral/retag:v1");
    Skopeo.assertSameBlobs(retagged, skopeo.copyToDir(corral + "/fresh/corral/retag:v1"));
  }
}
