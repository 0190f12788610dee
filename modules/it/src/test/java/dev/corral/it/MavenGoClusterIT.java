package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code mvn} and {@code go} through a 3-node cluster: three clients of each at once,
 * client {@code i} talking to node {@code i}, with the fixtures of {@link MavenClientIT} and
 * {@link GoClientIT}; every fixture path is requested upstream exactly once, cluster-wide.
 *
 * <p>Tagged {@code cross-node} like {@link CrossNodeIT} ({@code -DexcludedGroups=cross-node}
 * leaves the multi-node classes out of a quick local run).
 */
@Tag("cross-node")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MavenGoClusterIT {
  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private final Map<String, String[]> sums = new LinkedHashMap<>();
  private Path dir;
  private FixtureRegistry maven;
  private FixtureRegistry go;
  private CorralCluster cluster;

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    ClientCommand.require("mvn", "maven", "MavenGoClusterIT");
    ClientCommand.require("go", "golang-go", "MavenGoClusterIT");
    maven = MavenClientIT.fixture(dir.resolve("maven"));
    go = GoClientIT.fixture(dir.resolve("go"), sums);
    cluster = CorralCluster.start(processes, 3, dir, postgres.newDatabase(), List.of(),
        "m2=maven:" + maven.url() + "/", "go=go:" + go.url() + "/");
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() {
    processes.stopAll();
    if (maven != null) {
      maven.close();
    }
    if (go != null) {
      go.close();
    }
  }

  private String output() {
    StringBuilder out = new StringBuilder();
    cluster.nodes.forEach(n -> out.append(n.output()));
    return out.toString();
  }

  @Test
  void threeMavenClientsOnThreeNodesFetchEveryFileOnce() throws Exception {
    List<CompletableFuture<ClientRun>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Path client = dir.resolve("maven-client-" + i);
      MavenClientIT.clients(client, cluster.base(i) + "/m2/");
      runs.add(CompletableFuture.supplyAsync(() -> MavenClientIT.mvn(client, "consumer", client.resolve("local"))));
    }
    for (CompletableFuture<ClientRun> run : runs) {
      ClientRun r = run.join();
      assertEquals(0, r.exitCode(), r.describe() + output());
      assertTrue(r.output().contains("BUILD SUCCESS"), r.describe());
    }
    assertEquals(Map.of(), maven.repeated(), "every upstream path requested once, cluster-wide");
    assertEquals(1, maven.count("/com/example/demo-lib/1.0.0/demo-lib-1.0.0.jar"));
  }

  @Test
  void threeGoClientsOnThreeNodesFetchEveryFileOnce() {
    List<CompletableFuture<ClientRun>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Path home = dir.resolve("go-client-" + i);
      String goproxy = cluster.base(i) + "/go";
      runs.add(CompletableFuture.supplyAsync(() -> GoClientIT.download(goproxy, home, GoClientIT.MODULES)));
    }
    for (CompletableFuture<ClientRun> run : runs) {
      ClientRun r = run.join();
      assertEquals(0, r.exitCode(), r.describe() + output());
      GoClientIT.assertSums(sums, r);
    }
    assertEquals(Map.of(), go.repeated(), "every upstream path requested once, cluster-wide");
    assertEquals(1, go.count("/example.com/!upper/@v/v0.1.0.zip"));
  }
}
