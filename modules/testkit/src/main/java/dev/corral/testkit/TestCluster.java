package dev.corral.testkit;

import dev.corral.core.fetch.FetchEntity;
import dev.corral.server.CorralServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.sharding.ShardRegion;
import org.apache.pekko.cluster.sharding.typed.GetShardRegionState;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * Several whole Corral nodes in one JVM forming one Pekko cluster over loopback: Artery on free
 * ports, the later nodes joining the first through {@code --seed-nodes}, and one
 * shared H2 file database for the key records (what PostgreSQL is for a real cluster).
 */
public final class TestCluster implements AutoCloseable {
  /** The running nodes, in start order. */
  public final List<CorralServer> nodes = new CopyOnWriteArrayList<>();
  private final Path dir;
  private final String upstreamBase;
  private final String hocon;
  private final String[] extraArgs;
  private final String shared;
  private Address seed;
  private final java.util.Map<CorralServer, Path> dirs = new java.util.concurrent.ConcurrentHashMap<>();

  /** The holders the key's record lists, as node {@code s} reads it from the shared database. */
  public static List<String> holders(CorralServer s, dev.corral.core.key.ArtifactKey key) {
    try {
      var got = s.node().records().read("Fetch|" + key.id()).toCompletableFuture().get();
      return got.value().map(r -> r.holders()).orElse(List.of());
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  private TestCluster(Path dir, String upstreamBase, String hocon, String[] extraArgs) {
    this.dir = dir;
    this.upstreamBase = upstreamBase;
    this.hocon = hocon;
    this.extraArgs = extraArgs;
    String url = "jdbc:h2:file:" + dir.resolve("shared-db").resolve("corral")
        + ";DB_CLOSE_ON_EXIT=FALSE;DATABASE_TO_UPPER=false";
    this.shared = "jdbc-durable-state-store.slick.db.url = \"" + url + "\"\n"
        + "pekko-persistence-jdbc.shared-databases.slick.db.url = \"" + url + "\"\n"
        // When the whole test cluster stops at once nobody is left to confirm the exits.
        + "pekko.coordinated-shutdown.phases.cluster-exiting.timeout = 2 s\n"
        // Nodes here only leave gracefully; on a loaded test machine heartbeats are late by
        // seconds, and an unreachable node would stall a graceful hand-off until it is downed.
        + "pekko.cluster.failure-detector.acceptable-heartbeat-pause = 20 s\n"
        // A node's start reads the records tagged purged (MissedPurges), a durable state query
        // that waits out each gap in the records' global offsets for max-tries x query-delay
        // (5 x 1 s): a node started again on the shared records spent those 5 s. 5 x 200 ms here.
        + "jdbc-durable-state-store.durable-state-sequence-retrieval.query-delay = 200ms\n";
  }

  /** Starts {@code n} nodes and returns once every node sees all of them Up. */
  public static TestCluster start(Path dir, int n, String upstreamBase, String hocon, String... extraArgs) throws Exception {
    TestCluster c = new TestCluster(dir, upstreamBase, hocon, extraArgs);
    try {
      for (int i = 0; i < n; i++) {
        c.add();
      }
      c.awaitUp();
    } catch (Exception | Error e) {
      c.close();
      throw e;
    }
    return c;
  }

  /** Starts one more node (joining the first), without waiting for it to be Up. */
  public CorralServer add() throws Exception {
    return start(dir.resolve("node" + nodes.size() + "-" + System.nanoTime()));
  }

  /** The directory a node was started in (its data: store and all). */
  public Path dirOf(CorralServer s) {
    return dirs.get(s);
  }

  /**
   * Starts a node again from the directory of a stopped one (its store as it was left), joining
   * the first, without waiting for it to be Up.
   */
  public CorralServer restart(Path nodeDir) throws Exception {
    return start(nodeDir);
  }

  private CorralServer start(Path nodeDir) throws Exception {
    List<String> args = new ArrayList<>(List.of(extraArgs));
    if (seed != null) {
      args.addAll(List.of("--seed-nodes", seed.getHost().orElseThrow() + ":" + seed.getPort().orElseThrow()));
    }
    CorralServer s = TestNode.start(nodeDir, upstreamBase, shared + hocon, args.toArray(new String[0]));
    dirs.put(s, nodeDir);
    if (seed == null) {
      seed = Cluster.get(s.system()).selfMember().address();
    }
    nodes.add(s);
    return s;
  }

  public CorralServer node(int i) {
    return nodes.get(i);
  }

  /** Waits until every running node sees every running node Up. */
  public void awaitUp() {
    int n = nodes.size();
    TestNode.await(n + " members up", Duration.ofSeconds(30), () -> nodes.stream().allMatch(s -> {
      var members = Cluster.get(s.system()).state().getMembers();
      int up = 0;
      for (var m : members) {
        if (m.status() == MemberStatus.up()) {
          up++;
        }
      }
      return up == n;
    }));
  }

  /** The node whose shard region runs the entity with this id now, if any. */
  public Optional<CorralServer> entityHost(String entityId) throws Exception {
    for (CorralServer s : nodes) {
      ShardRegion.CurrentShardRegionState state = AskPattern.<org.apache.pekko.cluster.sharding.typed.ClusterShardingQuery,
          ShardRegion.CurrentShardRegionState>ask(
              ClusterSharding.get(s.system()).shardState(),
              replyTo -> new GetShardRegionState(FetchEntity.TYPE_KEY, replyTo),
              Duration.ofSeconds(10), s.system().scheduler())
          .toCompletableFuture().get(15, TimeUnit.SECONDS);
      for (ShardRegion.ShardState shard : state.getShards()) {
        if (shard.getEntityIds().contains(entityId)) {
          return Optional.of(s);
        }
      }
    }
    return Optional.empty();
  }

  /** Stops one node (a graceful leave: its shards move to the others) and forgets it. */
  public void stop(CorralServer s) throws Exception {
    nodes.remove(s);
    s.close();
  }

  public List<CorralServer> others(CorralServer... not) {
    List<CorralServer> rest = new ArrayList<>(nodes);
    rest.removeAll(List.of(not));
    return rest;
  }

  /** Stops every node at once (one by one, the last ones would wait for hand-offs to the gone). */
  @Override
  public void close() {
    List<Thread> stopping = new ArrayList<>();
    for (CorralServer s : nodes) {
      Thread t = new Thread(() -> {
        try {
          s.close();
        } catch (Exception e) {
          // the others still stop
        }
      });
      t.start();
      stopping.add(t);
    }
    for (Thread t : stopping) {
      try {
        t.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    nodes.clear();
  }
}
