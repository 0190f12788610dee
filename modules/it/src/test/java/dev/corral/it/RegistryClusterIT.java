package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The real npm and pip clients, three of each at once, each through a different node of a
 * 3-process cluster (one PostgreSQL): every fixture path is requested from the upstream exactly
 * once, and every client installs what it asked for with URLs of the node it talked to; and
 * two npm installs of a 60-package tree ({@link NpmTree}) through two nodes, then a third
 * through the third node. Most of its time is the cluster's and PostgreSQL's start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryClusterIT {
  @RegisterExtension static final Postgres postgres = new Postgres();
  /** The npm tree of {@link #twoNpmInstallsOfOneTreeOnTwoNodesFetchEachFileOnceAndAThirdInstallNone}. */
  private static final int TREE_SIZE = 60;
  /**
   * Its packages with 1.5 MiB of incompressible data: tarballs over the tree repository's 256 KiB
   * inline limit (they stream to waiters) and over the 1 MiB cross-node one (they stream between
   * nodes from the peer endpoint).
   */
  private static final List<Integer> TREE_LARGE = List.of(2, 9, 22, 41, 58);
  private final CorralProcesses processes = new CorralProcesses();
  private final ExecutorService pool = Executors.newFixedThreadPool(3);
  private Map<String, PipClientIT.Project> projects;
  private FixtureRegistry npmFixture;
  private FixtureRegistry pipFixture;
  private NpmTree tree;
  private FixtureRegistry treeFixture;
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
    tree = NpmTree.of(TREE_SIZE, TREE_LARGE, 1536 * 1024);
    treeFixture = tree.serve(temp.resolve("tree-upstream"));
    // The tree's repository streams bodies over 256 KiB (its large tarballs); the file keeps
    // CorralCluster's quick join, since the last --config given wins.
    Path conf = temp.resolve("tree.conf");
    Files.writeString(conf, """
        pekko.cluster.seed-node-timeout = 1s
        corral.repos.tree { type = npm, url = "%s/", inline-limit = 256KiB }
        """.formatted(treeFixture.url()));
    cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of("--config", conf.toString()),
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
    if (treeFixture != null) {
      treeFixture.close();
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

  /**
   * Issue 13's "done when": two {@code npm install}s of the same 60-package tree at once, through
   * two nodes, make the fixture see exactly one GET per packument and per tarball (K1: a
   * tarball's key is its URL on every node, its integrity read through the cache, W1 across
   * nodes), the large tarballs streaming; a third install through the third node makes none.
   */
  @Test
  void twoNpmInstallsOfOneTreeOnTwoNodesFetchEachFileOnceAndAThirdInstallNone() throws Exception {
    for (int i : TREE_LARGE) {
      assertTrue(tree.packages.get(i).tarball().length > 1024 * 1024, "a large tarball streams, between nodes too");
    }
    List<CompletableFuture<ClientCommand.Result>> runs = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      int node = i;
      runs.add(CompletableFuture.supplyAsync(() -> {
        try {
          return installTree(node, "tree-app" + node);
        } catch (Exception e) {
          throw new RuntimeException(e);
        }
      }, pool));
    }
    for (int i = 0; i < 2; i++) {
      runs.get(i).get(NpmClientIT.CLIENT_TIMEOUT.toSeconds() + 30, TimeUnit.SECONDS).ok();
      assertTreeInstalled(i, "tree-app" + i);
    }
    NpmClientIT.assertOnlyCorralAskedTheFixture(treeFixture);
    assertEquals(Map.of(), treeFixture.repeated(), "every packument and tarball was requested once");
    for (NpmTree.Pkg p : tree.packages) {
      assertEquals(1, treeFixture.count(p.packumentPath()), p.packumentPath());
      assertEquals(1, treeFixture.count(p.tarballPath()), p.tarballPath());
    }
    assertTrue(treeFixture.requests().stream().allMatch(r -> r.method().equals("GET")), treeFixture.requests().toString());
    assertEquals(2 * TREE_SIZE, treeFixture.requests().size(), treeFixture.requests().toString());

    installTree(2, "tree-app2").ok();
    assertTreeInstalled(2, "tree-app2");
    assertEquals(2 * TREE_SIZE, treeFixture.requests().size(), "the third node's install asked the upstream nothing");
  }

  /** {@code npm install} of the tree's root through node {@code node}, in a new project with a fresh cache. */
  private ClientCommand.Result installTree(int node, String project) throws Exception {
    Path dir = temp.resolve(project);
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("package.json"), "{\"name\":\"" + project + "\",\"version\":\"1.0.0\",\"private\":true}\n");
    return ClientCommand.run(dir, NpmClientIT.npmEnv(), NpmClientIT.CLIENT_TIMEOUT, List.of("npm", "install",
        tree.root().name(), "--registry", cluster.base(node) + "/tree/", "--cache", temp.resolve(project + "-cache").toString(),
        "--userconfig", "/dev/null", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel", "http"));
  }

  /** Every package of the tree loads, and the lockfile resolved each through node {@code node}. */
  private void assertTreeInstalled(int node, String project) throws Exception {
    Path dir = temp.resolve(project);
    ClientCommand.Result loaded = ClientCommand.run(dir, NpmClientIT.npmEnv(), NpmClientIT.CLIENT_TIMEOUT,
        List.of("node", "-e", "console.log(require('" + tree.root().name() + "').sort().join('\\n'))")).ok();
    assertEquals(tree.names(), loaded.output().lines().map(String::trim).filter(l -> !l.isEmpty()).sorted().toList());
    String lock = Files.readString(dir.resolve("package-lock.json"));
    Matcher m = Pattern.compile("\"resolved\": \"([^\"]+)\"").matcher(lock);
    List<String> resolved = new ArrayList<>();
    while (m.find()) {
      resolved.add(m.group(1));
    }
    List<String> expected = tree.packages.stream().map(p -> cluster.base(node) + "/tree" + p.tarballPath()).sorted().toList();
    assertEquals(expected, resolved.stream().sorted().toList(), lock);
  }
}
