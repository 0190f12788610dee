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
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three real Corral processes on 127.0.0.1 and one real PostgreSQL form one cluster through
 * Cluster Bootstrap with config discovery (forming through seed nodes is what CrossNodeIT's
 * cluster does). Membership is read from each
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
  void threeNodesFormOneClusterThroughBootstrapAndLoseNodesBySigkillSigtermAndDowning() throws Exception {
    Postgres.Database db = postgres.newDatabase();
    Path password = temp.resolve("pw");
    Files.writeString(password, db.password());
    List<Integer> management = List.of(Postgres.freePort(), Postgres.freePort(), Postgres.freePort());
    StringBuilder endpoints = new StringBuilder();
    for (int port : management) {
      endpoints.append(endpoints.length() == 0 ? "" : ", ").append("{ host = \"127.0.0.1\", port = ").append(port).append(" }");
    }
    Path conf = temp.resolve("bootstrap.conf");
    // Writable management routes only here, so that the test can down a member through them.
    // Bootstrap timings for a test, as KubernetesDiscoveryIT has them (Pekko's defaults: 1 s
    // probes, 5 s of stable contact points before the lowest one forms a new cluster).
    Files.writeString(conf, "pekko.discovery.config.services.corral.endpoints = [" + endpoints + "]\n"
        + "pekko.management.http.route-providers-read-only = false\n"
        + "pekko.management.cluster.bootstrap.contact-point-discovery.interval = 500ms\n"
        + "pekko.management.cluster.bootstrap.contact-point-discovery.stable-margin = 2s\n"
        + "pekko.management.cluster.bootstrap.contact-point.probe-interval = 500ms\n");
    CorralCluster cluster = new CorralCluster();
    for (int i = 0; i < 3; i++) {
      cluster.nodes.add(processes.serve("node-" + (i + 1), List.of(), temp.resolve("data-" + i),
          List.of("--discovery", "config", "--config", conf.toString(), "--node-name", "node-" + (i + 1),
              "--management-port", String.valueOf(management.get(i)),
              "--journal", db.url(), "--journal-user", db.user(), "--journal-password-file", password.toString()),
          REPO));
      cluster.managementPorts.add(management.get(i));
    }
    for (CorralProcess node : cluster.nodes) {
      node.awaitListening(Duration.ofSeconds(90));
    }
    for (int i = 0; i < 3; i++) {
      cluster.awaitMembersUp(i, 3, FORM);
    }
    cluster.awaitReady(FORM);

    for (int i = 0; i < 3; i++) {
      String name = "node-" + (i + 1);
      CorralProcess node = cluster.nodes.get(i);
      assertTrue(node.stdout().contains("Cluster Bootstrap (config discovery)"), node.output());
      String metrics = new String(Http.getBytes(cluster.base(i) + "/-/metrics").body(), StandardCharsets.UTF_8);
      assertTrue(metrics.contains("corral_node_info{node=\"" + name + "\"} 1"), name + ":\n" + metrics);
      assertTrue(node.stdout().contains("[" + name + "]"), "log lines carry the node name\n" + node.output());
      assertTrue(node.stdout().contains("management endpoints on http://127.0.0.1:" + management.get(i)),
          node.output());
    }
    assertManagementOnlyOnTheLoopback(management.get(0));

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
    assertTrue(leaving.stdout().contains("CoordinatedShutdown with reason [JvmExitReason]"), leaving.output());
    assertEquals(200, Http.getBytes(cluster.base(0) + "/-/health/ready").statusCode());

    // Downed (here through management; in production by the split brain resolver): the node
    // serves nothing more, so its process exits by itself with code 1 for a supervisor to restart.
    Matcher self = Pattern.compile("\"selfNode\"\\s*:\\s*\"([^\"]+)\"").matcher(cluster.members(0));
    assertTrue(self.find(), cluster.members(0));
    HttpResponse<String> down = Http.CLIENT.send(HttpRequest.newBuilder(
            URI.create(cluster.management(0) + "/cluster/members/" + self.group(1)))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .PUT(HttpRequest.BodyPublishers.ofString("operation=Down")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, down.statusCode(), down.body());
    CorralProcess downed = cluster.nodes.get(0);
    assertEquals(1, downed.awaitExit(Duration.ofSeconds(60)), downed.output());
    assertTrue(downed.stdout().contains("the node stopped"), downed.output());
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
