package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The coalescing promise on container images (issue 15, done-when 2): a 3-process cluster (one
 * PostgreSQL) mirrors a real registry; 30 {@code skopeo copy} pulls of one image start at once,
 * ten through each node; every pull gets the image byte for byte, and the registry's own access
 * log shows exactly one GET per blob and one resolution of the tag. One layer is larger than the
 * repository's inline limit, so it streams to its waiters and between nodes while it downloads.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OciClusterIT {
  @RegisterExtension static final Postgres postgres = new Postgres();
  static final String REPO = "team/app";
  static final int PULLS = 30;

  private final CorralProcesses processes = new CorralProcesses();
  private final ExecutorService pool = Executors.newFixedThreadPool(PULLS);
  private Path temp;
  private OciRegistry registry;
  private OciImage image;
  private CorralCluster cluster;

  @BeforeAll
  void start() throws Exception {
    temp = Files.createTempDirectory("oci-cluster-it");
    registry = OciRegistry.start(temp.resolve("registry"));
    image = OciImage.builder()
        .layer(20_000, 3000)
        .layer(1536 * 1024)
        .layer(200 * 1024, 11)
        .tag("v1")
        .write(temp.resolve("layout"));
    Skopeo.create(temp.resolve("pusher")).push(image, registry.hostPort() + "/" + REPO);
    // The 1.5 MiB layer is over the inline limit: it streams to waiters and between nodes. The
    // file keeps CorralCluster's quick join, since the last --config given wins.
    Path conf = temp.resolve("oci.conf");
    Files.writeString(conf, """
        pekko.cluster.seed-node-timeout = 1s
        corral.repos.images { type = oci, url = "%s", inline-limit = 256KiB }
        """.formatted(registry.base()));
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of("--config", conf.toString()));
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() throws Exception {
    pool.shutdownNow();
    processes.stopAll();
    if (registry != null) {
      registry.close();
    }
    if (temp != null) {
      GeneratedBody.deleteTree(temp);
    }
  }

  @Test
  void thirtyPullsAtOnceOverThreeNodesAskTheRegistryForEachBlobOnceAndTheTagOnce() throws Exception {
    List<Skopeo> clients = new ArrayList<>();
    for (int i = 0; i < PULLS; i++) {
      clients.add(Skopeo.create(temp.resolve("puller-" + i)));
    }
    int before = registry.requests().size();
    List<CompletableFuture<Path>> pulls = new ArrayList<>();
    for (int i = 0; i < PULLS; i++) {
      Skopeo client = clients.get(i);
      String node = cluster.base(i % 3).replaceFirst("^http://", "");
      pulls.add(CompletableFuture.supplyAsync(() -> {
        try {
          return client.copyToDir(node + "/images/" + REPO + ":v1");
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, pool));
    }
    for (CompletableFuture<Path> pull : pulls) {
      Skopeo.assertSameBlobs(image, pull.join());
    }
    List<OciRegistry.Request> all = registry.requests();
    List<OciRegistry.Request> asked = List.copyOf(all.subList(before, all.size()));
    assertEquals(1, OciRegistry.count(asked, "GET", "/v2/" + REPO + "/manifests/v1"), "one tag resolution: " + asked);
    for (OciImage.Blob blob : image.blobs().subList(1, image.blobs().size())) {
      assertEquals(1, OciRegistry.count(asked, "GET", "/v2/" + REPO + "/blobs/" + blob.digest()),
          "one GET of " + blob + ": " + asked);
    }
    List<OciRegistry.Request> other = new ArrayList<>(asked);
    other.removeIf(r -> r.method().equals("GET") && r.path().startsWith("/v2/" + REPO + "/"));
    assertEquals(List.of(), other, "nothing else asked of the registry");
  }
}
