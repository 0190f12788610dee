package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The real npm and pip clients, three of each at once, each through a different node of a
 * 3-process cluster (one PostgreSQL): every fixture path is requested from the upstream exactly
 * once, and every client installs what it asked for with URLs of the node it talked to. Most
 * of its time is the cluster's and PostgreSQL's start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryClusterIT {
  @RegisterExtension static final Postgres postgres = new Postgres();
  private final CorralProcesses processes = new CorralProcesses();
  private final ExecutorService pool = Executors.newFixedThreadPool(3);
  private Map<String, PipClientIT.Project> projects;
  private FixtureRegistry npmFixture;
  private FixtureRegistry pipFixture;
  private CorralCluster cluster;
  private Path temp;

  @BeforeAll
  void startCluster() throws Exception {
    ClientCommand.require("npm", "npm", "RegistryClusterIT");
    ClientCommand.require("python3", "python3", "RegistryClusterIT");
    temp = Files.createTempDirectory("registry-cluster-it");
    NpmClientIT.pack(temp.resolve("packed"));
    npmFixture = NpmClientIT.startFixture(temp.resolve("npm-upstream"));
    projects = PipClientIT.projects();
    pipFixture = PipClientIT.fixture(projects, temp.resolve("pip-upstream"));
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of(),
        "npm=npm:" + npmFixture.url() + "/", "pypi=pypi:" + pipFixture.url() + "/simple/");
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, Duration.ofSeconds(60));
    }
    cluster.awaitReady(Duration.ofSeconds(60));
  }

  @AfterAll
  void stop() throws Exception {
    pool.shutdownNow();
    processes.stopAll();
    if (npmFixture != null) {
      npmFixture.close();
    }
    if (pipFixture != null) {
      pipFixture.close();
    }
    if (temp != null) {
      GeneratedBody.deleteTree(temp);
    }
  }

  private <T> List<T> onEachNode(java.util.function.IntFunction<Callable<T>> run) throws Exception {
    List<CompletableFuture<T>> runs = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Callable<T> c = run.apply(i);
      runs.add(CompletableFuture.supplyAsync(() -> {
        try {
          return c.call();
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }, pool));
    }
    List<T> out = new ArrayList<>();
    for (CompletableFuture<T> f : runs) {
      out.add(f.get(NpmClientIT.CLIENT_TIMEOUT.toSeconds() + 30, TimeUnit.SECONDS));
    }
    return out;
  }

  @Test
  void threeNpmInstallsOnThreeNodesFetchEachFileOnce() throws Exception {
    List<ClientCommand.Result> results = onEachNode(i -> () -> NpmClientIT.install(cluster.base(i) + "/npm",
        temp.resolve("npm-app" + i), temp.resolve("npm-cache" + i)));
    for (int i = 0; i < 3; i++) {
      results.get(i).ok();
      NpmClientIT.assertInstalled(cluster.base(i) + "/npm", temp.resolve("npm-app" + i));
    }
    NpmClientIT.assertOnlyCorralAskedTheFixture(npmFixture);
    assertEquals(Map.of(), npmFixture.repeated(), "every fixture path was requested once");
    assertEquals(2 * NpmClientIT.PACKAGES.size(), npmFixture.requests().size(), npmFixture.requests().toString());
  }

  @Test
  void threePipDownloadsOnThreeNodesFetchEachFileOnce() throws Exception {
    List<ClientCommand.Result> results = onEachNode(i -> () -> PipClientIT.download(cluster.base(i) + "/pypi",
        temp.resolve("pip-run" + i)));
    for (int i = 0; i < 3; i++) {
      PipClientIT.assertDownloaded(projects, temp.resolve("pip-run" + i), results.get(i).ok());
    }
    PipClientIT.assertOnlyCorralAskedTheFixture(pipFixture);
    assertEquals(Map.of(), pipFixture.repeated(), "every fixture path was requested once");
    assertEquals(PipClientIT.fixturePaths(projects).size(), pipFixture.requests().size(), pipFixture.requests().toString());
  }
}
