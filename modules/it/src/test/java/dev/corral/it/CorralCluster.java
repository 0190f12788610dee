package dev.corral.it;

import dev.corral.testkit.Await;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Several Corral processes on 127.0.0.1 forming one cluster through seed nodes, sharing one
 * PostgreSQL database: each node gets its own data dir, HTTP port (free), cluster port and
 * management port (picked free here, since the seed list must name them up front).
 */
final class CorralCluster {
  private static final Pattern UP = Pattern.compile("\"status\"\\s*:\\s*\"Up\"");
  private static final Pattern MEMBER = Pattern.compile("\"node\"\\s*:\\s*\"pekko://");

  final List<CorralProcess> nodes = new ArrayList<>();
  final List<Integer> clusterPorts = new ArrayList<>();
  final List<Integer> managementPorts = new ArrayList<>();
  /** What each node was started with, so that {@link #restart} can start it again the same way. */
  private final List<Start> starts = new ArrayList<>();
  private CorralProcesses processes;
  /** Ports picked for this cluster: all are picked before any node binds its own. */
  private final java.util.Set<Integer> picked = new java.util.HashSet<>();

  private record Start(String name, List<String> javaOpts, Path dataDir, List<String> args, String[] repos) {}

  /**
   * Starts {@code size} nodes called node-1, node-2, ... and waits until each prints its
   * listening line (not until the cluster is formed: see {@link #awaitMembersUp}).
   */
  static CorralCluster start(CorralProcesses processes, int size, Path dir, Postgres.Database db,
      List<String> extraArgs, String... repos) throws IOException {
    return start(processes, size, dir, db, List.of(), false, extraArgs, repos);
  }

  /**
   * As above, each JVM started with {@code javaOpts} (e.g. {@code -Xmx256m}); with
   * {@code fixedHttpPorts} each node's HTTP and peer ports are picked up front, so a node started again by
   * {@link #restart} listens where it did before (the replica directory names nodes by URL).
   */
  static CorralCluster start(CorralProcesses processes, int size, Path dir, Postgres.Database db,
      List<String> javaOpts, boolean fixedHttpPorts, List<String> extraArgs, String... repos) throws IOException {
    CorralCluster cluster = new CorralCluster();
    cluster.processes = processes;
    for (int i = 0; i < size; i++) {
      cluster.clusterPorts.add(cluster.unpickedPort());
      cluster.managementPorts.add(cluster.unpickedPort());
    }
    List<String> seeds = cluster.clusterPorts.stream().map(p -> "127.0.0.1:" + p).toList();
    Path password = dir.resolve("journal-password");
    Files.writeString(password, db.password() + "\n");
    // Started together, the nodes' first InitJoin reaches seeds not in a cluster yet, and Pekko
    // asks again only after seed-node-timeout: 20 s in corral-cluster.conf, so that a restarted
    // first seed rejoins rather than forming a cluster of its own. The first start of each node
    // asks every second instead (no cluster exists yet, so there is none to miss: the first
    // seed's first round of InitJoin is nearly always refused, the others not being Up yet);
    // a restart (see #restart) keeps the 20 s of production.
    Path quickJoin = dir.resolve("quick-join.conf");
    Files.writeString(quickJoin, "pekko.cluster.seed-node-timeout = 1s\n");
    for (int i = 0; i < size; i++) {
      List<String> args = new ArrayList<>(List.of(
          "--cluster-port", String.valueOf(cluster.clusterPorts.get(i)),
          "--seed-nodes", String.join(",", seeds),
          "--node-name", "node-" + (i + 1),
          "--management-port", String.valueOf(cluster.managementPorts.get(i)),
          "--journal", db.url(), "--journal-user", db.user(), "--journal-password-file", password.toString()));
      if (fixedHttpPorts) {
        args.addAll(List.of("--http-port", String.valueOf(cluster.unpickedPort()))); // the last flag wins
        // The replica directory names a node by its peer port's URL: keep that across restarts too.
        args.addAll(List.of("--peer-port", String.valueOf(cluster.unpickedPort())));
      }
      List<String> firstStart = new ArrayList<>(args);
      firstStart.addAll(List.of("--config", quickJoin.toString())); // before extraArgs: a --config there wins
      firstStart.addAll(extraArgs);
      args.addAll(extraArgs);
      Start start = new Start("node-" + (i + 1), List.copyOf(javaOpts), dir.resolve("data-" + (i + 1)), List.copyOf(args), repos);
      cluster.starts.add(start);
      cluster.nodes.add(processes.serve(start.name(), start.javaOpts(), start.dataDir(), firstStart, start.repos()));
    }
    for (CorralProcess node : cluster.nodes) {
      node.awaitListening(Duration.ofSeconds(90));
    }
    return cluster;
  }

  /**
   * A free port not picked before for this cluster: the ports are picked up front and bound only
   * when the nodes start, so the kernel may offer a port again that a node is yet to bind (with 10
   * nodes a peer port once came out as another node's cluster port, and the node could not bind).
   */
  private int unpickedPort() throws IOException {
    for (int attempt = 0; attempt < 100; attempt++) {
      int port = Postgres.freePort();
      if (picked.add(port)) {
        return port;
      }
    }
    throw new IOException("no free port that this cluster has not picked yet in 100 tries");
  }

  /**
   * Starts node {@code i} again (after it stopped) with the same options, ports and data dir, and
   * waits for its listening line. Without the first start's quick join: the others are in a
   * cluster, and a restarted first seed must wait for their answer, not form a cluster of its own.
   */
  CorralProcess restart(int i, Duration timeout) throws IOException {
    return restart(i, timeout, List.of());
  }

  /**
   * As above, with {@code moreArgs} after the node's first arguments (the last flag wins): e.g. a
   * seed list that does not name the node first, so that a restarted first seed can only join the
   * running cluster, never form one of its own.
   */
  CorralProcess restart(int i, Duration timeout, List<String> moreArgs) throws IOException {
    CorralProcess p = startAgain(i, moreArgs);
    p.awaitListening(timeout);
    return p;
  }

  /**
   * Starts node {@code i} again (after it stopped) as {@link #restart} does, without waiting for its
   * listening line: several nodes started again at once, each awaited afterwards.
   */
  CorralProcess startAgain(int i, List<String> moreArgs) throws IOException {
    if (nodes.get(i).isAlive()) {
      throw new IllegalStateException(starts.get(i).name() + " still runs");
    }
    Start s = starts.get(i);
    List<String> args = new ArrayList<>(s.args());
    args.addAll(moreArgs);
    CorralProcess p = processes.serve(s.name(), s.javaOpts(), s.dataDir(), args, s.repos());
    nodes.set(i, p);
    return p;
  }

  String base(int i) {
    return nodes.get(i).baseUrl();
  }

  String management(int i) {
    return "http://127.0.0.1:" + managementPorts.get(i);
  }

  /** Waits until node {@code i} sees exactly {@code expected} members, all Up, and no unreachable one. */
  void awaitMembersUp(int i, int expected, Duration timeout) throws Exception {
    Await.until(timeout, () -> nodes.get(i).output() + "\nlast /cluster/members: " + members(i),
        () -> membersUp(i, expected));
  }

  boolean membersUp(int i, int expected) {
    String json = members(i);
    return count(MEMBER, json) == expected && count(UP, json) == expected && json.contains("\"unreachable\":[]");
  }

  /** Node {@code i}'s view of the membership ({@code GET /cluster/members}), or the failure. */
  String members(int i) {
    try {
      HttpResponse<byte[]> r = Http.getBytes(management(i) + "/cluster/members");
      return new String(r.body(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(" + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(interrupted)";
    }
  }

  /** Waits until every node answers 200 on /-/health/ready. */
  void awaitReady(Duration timeout) throws Exception {
    for (int i = 0; i < nodes.size(); i++) {
      String url = base(i) + "/-/health/ready";
      int node = i;
      Await.until(timeout, () -> nodes.get(node).output(), () -> Http.getBytes(url).statusCode() == 200);
    }
  }

  private static int count(Pattern p, String text) {
    Matcher m = p.matcher(text);
    int n = 0;
    while (m.find()) {
      n++;
    }
    return n;
  }
}
