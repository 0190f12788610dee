package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three real Corral processes on 127.0.0.1 and one real PostgreSQL form one cluster: through
 * seed nodes, and through Cluster Bootstrap with config discovery. Membership is read from each
 * node's Pekko Management endpoint ({@code GET /cluster/members}), which listens on the loopback
 * only. A node killed with SIGKILL is downed by the split brain resolver and removed; a node sent
 * SIGTERM leaves by itself.
 */
class ClusterIT {
  private static final Duration FORM = Duration.ofSeconds(60);
  private static final String REPO = "up=generic:http://127.0.0.1:1/";

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  @Test
  void threeNodesJoinTheirSeedNodesAndASigkilledNodeIsDownedAndRemoved() throws Exception {
    CorralCluster cluster = CorralCluster.start(processes, 3, temp, postgres.newDatabase(), List.of(), REPO);
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, FORM);
    }
    cluster.awaitReady(FORM);

    for (int i = 0; i < 3; i++) {
      String name = "node-" + (i + 1);
      String metrics = new String(Http.getBytes(cluster.base(i) + "/-/metrics").body(), StandardCharsets.UTF_8);
      assertTrue(metrics.contains("corral_node_info{node=\"" + name + "\"} 1"), name + ":\n" + metrics);
      assertTrue(cluster.nodes.get(i).stdout().contains("[" + name + "]"), "log lines carry the node name\n"
          + cluster.nodes.get(i).output());
      assertTrue(cluster.nodes.get(i).stdout().contains("management endpoints on http://127.0.0.1:"
          + cluster.managementPorts.get(i)), cluster.nodes.get(i).output());
    }
    assertManagementOnlyOnTheLoopback(cluster.managementPorts.get(0));

    // SIGKILL: no goodbye. The others must notice, down it (keep-majority: 2 of 3) and remove it.
    long killedAt = System.nanoTime();
    cluster.nodes.get(2).kill();
    cluster.awaitMembersUp(0, 2, Duration.ofSeconds(45));
    cluster.awaitMembersUp(1, 2, Duration.ofSeconds(45));
    System.out.printf("ClusterIT: a SIGKILLed node was downed and removed after %.1f s%n",
        (System.nanoTime() - killedAt) / 1e9);
    for (int i = 0; i < 2; i++) {
      assertEquals(200, Http.getBytes(cluster.base(i) + "/-/health/ready").statusCode());
    }

    // SIGTERM: the node drains, then leaves through coordinated shutdown (its shards handed off),
    // so the last node sees it removed without any downing, and it exits by itself.
    CorralProcess leaving = cluster.nodes.get(1);
    leaving.terminate();
    leaving.awaitExit(Duration.ofSeconds(60));
    cluster.awaitMembersUp(0, 1, Duration.ofSeconds(30));
    String log = leaving.stdout();
    assertTrue(log.contains("CoordinatedShutdown with reason [JvmExitReason]"), leaving.output());
    assertEquals(200, Http.getBytes(cluster.base(0) + "/-/health/ready").statusCode());
  }

  @Test
  void clusterBootstrapWithConfigDiscoveryFormsOneCluster() throws Exception {
    Postgres.Database db = postgres.newDatabase();
    Path password = temp.resolve("pw");
    Files.writeString(password, db.password());
    List<Integer> management = List.of(Postgres.freePort(), Postgres.freePort(), Postgres.freePort());
    StringBuilder endpoints = new StringBuilder();
    for (int port : management) {
      endpoints.append(endpoints.length() == 0 ? "" : ", ").append("{ host = \"127.0.0.1\", port = ").append(port).append(" }");
    }
    Path conf = temp.resolve("bootstrap.conf");
    Files.writeString(conf, "pekko.discovery.config.services.corral.endpoints = [" + endpoints + "]\n");
    List<CorralProcess> nodes = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      nodes.add(processes.serve("boot-" + (i + 1), List.of(), temp.resolve("data-" + i),
          List.of("--discovery", "config", "--config", conf.toString(),
              "--management-port", String.valueOf(management.get(i)),
              "--journal", db.url(), "--journal-user", db.user(), "--journal-password-file", password.toString()),
          REPO));
    }
    for (CorralProcess node : nodes) {
      node.awaitListening(Duration.ofSeconds(90));
    }
    CorralCluster view = new CorralCluster();
    view.nodes.addAll(nodes);
    view.managementPorts.addAll(management);
    for (int i = 0; i < 3; i++) {
      view.awaitMembersUp(i, 3, FORM);
    }
    view.awaitReady(FORM);
    assertTrue(nodes.stream().allMatch(n -> n.stdout().contains("Cluster Bootstrap (config discovery)")),
        "every node used bootstrap");
  }

  /** Nothing answers on the management port at this machine's other addresses (when it has one). */
  private static void assertManagementOnlyOnTheLoopback(int port) throws IOException {
    Optional<InetAddress> other = Collections.list(NetworkInterface.getNetworkInterfaces()).stream()
        .flatMap(n -> Collections.list(n.getInetAddresses()).stream())
        .filter(a -> a instanceof Inet4Address && !a.isLoopbackAddress())
        .findFirst();
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 2_000);
    }
    if (other.isPresent()) {
      assertThrows(IOException.class, () -> {
        try (Socket s = new Socket()) {
          s.connect(new InetSocketAddress(other.get(), port), 2_000);
        }
      }, "management must not listen on " + other.get());
    } else {
      assertFalse(false, "no non-loopback IPv4 address here: only the loopback check ran");
    }
  }
}
