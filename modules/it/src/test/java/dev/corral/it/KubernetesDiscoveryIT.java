package dev.corral.it;

import static dev.corral.it.Manifests.find;
import static dev.corral.it.Manifests.list;
import static dev.corral.it.Manifests.map;
import static dev.corral.it.Manifests.maps;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.server.Setting;
import dev.corral.testkit.Await;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Cluster Bootstrap with kubernetes-api discovery, the way {@code deploy/kubernetes} runs it, on
 * three real node processes and a {@link FakeKubernetesApi} (HTTPS on 127.0.0.1). Each "pod" has
 * its own loopback address (127.0.0.2, .3, .4) as its pod IP and its own management port; the
 * fake API lists them with the labels, container name and named ports of the StatefulSet's pod
 * template. The nodes get the manifest's discovery setting and its status.podIP / metadata.name
 * fields as environment variables, and the service-account files (CA, token, namespace) through
 * the discovery's path settings in a {@code --config} file. So a manifest whose labels, port name
 * or discovery method no longer match what the node asks for fails here, as would a node that
 * sends no token or the wrong selector.
 */
class KubernetesDiscoveryIT {
  private static final Duration START = Duration.ofSeconds(90);
  private static final Duration FORM = Duration.ofSeconds(60);
  private static final String NAMESPACE = "corral-it";
  private static final Pattern UP = Pattern.compile("\"status\"\\s*:\\s*\"Up\"");
  private static final Pattern MEMBER = Pattern.compile("\"node\"\\s*:\\s*\"pekko://");
  private static final List<String> POD_IPS = List.of("127.0.0.2", "127.0.0.3", "127.0.0.4");

  @RegisterExtension static final Postgres postgres = new Postgres();
  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;

  @Test
  void threeNodesFormOneClusterThroughTheKubernetesApiAndFetchAKeyOnce() throws Exception {
    Manifests manifests = Manifests.read(Manifests.directory());
    Map<String, Object> template = map(manifests.one("StatefulSet", "corral").body(), "spec", "template");
    Map<String, Object> container = maps(list(template, "spec", "containers")).get(0);
    Map<String, String> labels = strings(map(template, "metadata", "labels"));
    List<Map<String, Object>> env = maps(list(container, "env"));
    int manifestManagementPort = Integer.parseInt(value(env, Setting.MANAGEMENT_PORT.env()));
    String managementPortName = maps(list(container, "ports")).stream()
        .filter(p -> Objects.equals(p.get("containerPort"), manifestManagementPort))
        .map(p -> (String) p.get("name")).findFirst()
        .orElseThrow(() -> new AssertionError("no container port " + manifestManagementPort + " in " + container));

    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    byte[] body = CrashRestartIT.bytes(12, 256 * 1024);
    try (FakeKubernetesApi api = FakeKubernetesApi.start(temp.resolve("serviceaccount"), NAMESPACE);
         FakeUpstream upstream = new FakeUpstream((exchange, n) -> {
           arrived.countDown();
           release.await(60, TimeUnit.SECONDS);
           FakeUpstream.send(exchange, 200, body);
         })) {
      Postgres.Database db = postgres.newDatabase();
      Path password = Files.writeString(temp.resolve("journal-password"), db.password());
      // Where a pod has its service account; and bootstrap timings for a test (Pekko's
      // defaults: 1 s probes, 5 s of stable contact points before forming a new cluster).
      Path conf = Files.writeString(temp.resolve("k8s.conf"), String.join("\n",
          "pekko.discovery.kubernetes-api.api-ca-path = \"" + api.caCertificate() + "\"",
          "pekko.discovery.kubernetes-api.api-token-path = \"" + api.tokenFile() + "\"",
          "pekko.discovery.kubernetes-api.pod-namespace-path = \"" + api.namespaceFile() + "\"",
          "pekko.management.cluster.bootstrap.contact-point-discovery.interval = 500ms",
          "pekko.management.cluster.bootstrap.contact-point-discovery.stable-margin = 2s",
          "pekko.management.cluster.bootstrap.contact-point.probe-interval = 500ms", ""));

      // The pods as the API lists them: the manifest's ports, the management one on a free port
      // of the pod's own address (a distinct port each, so that only the port name finds it).
      CorralCluster cluster = new CorralCluster();
      for (int i = 0; i < 3; i++) {
        int management = freePort(POD_IPS.get(i));
        cluster.managementPorts.add(management);
        Map<String, Integer> ports = new LinkedHashMap<>();
        for (Map<String, Object> p : maps(list(container, "ports"))) {
          ports.put((String) p.get("name"), (Integer) p.get("containerPort"));
        }
        ports.put(managementPortName, management);
        api.addPod(new FakeKubernetesApi.Pod("corral-" + i, POD_IPS.get(i), labels, (String) container.get("name"), ports));
      }
      for (int i = 0; i < 3; i++) {
        String pod = "corral-" + i;
        String ip = POD_IPS.get(i);
        Map<String, String> nodeEnv = new HashMap<>(api.serviceEnvironment());
        nodeEnv.put(Setting.DISCOVERY.env(), value(env, Setting.DISCOVERY.env()));
        for (Map<String, Object> e : env) {
          String field = (String) map(e, "valueFrom", "fieldRef").get("fieldPath");
          if ("status.podIP".equals(field)) {
            nodeEnv.put((String) e.get("name"), ip); // the cluster host and the management host
          } else if ("metadata.name".equals(field)) {
            nodeEnv.put((String) e.get("name"), pod);
          }
        }
        cluster.nodes.add(processes.serve(pod, List.of(), nodeEnv, temp.resolve("data-" + i),
            List.of("--config", conf.toString(), "--cluster-port", String.valueOf(freePort(ip)),
                "--management-port", String.valueOf(cluster.managementPorts.get(i)),
                "--journal", db.url(), "--journal-user", db.user(), "--journal-password-file", password.toString()),
            "up=generic:" + upstream.url("/")));
      }
      for (CorralProcess node : cluster.nodes) {
        node.awaitListening(START);
      }
      for (int i = 0; i < 3; i++) {
        int node = i;
        Await.until(FORM, () -> cluster.nodes.get(node).output() + "\nlast /cluster/members: " + members(cluster, node)
            + "\nAPI requests: " + api.requests(), () -> membersUp(cluster, node));
      }
      cluster.awaitReady(FORM);

      // One cluster, formed through the API: every member is one of the pods, at its pod IP.
      for (int i = 0; i < 3; i++) {
        String members = members(cluster, i);
        for (String ip : POD_IPS) {
          assertTrue(members.contains("@" + ip + ":"), "node " + i + " sees the pod at " + ip + ": " + members);
        }
        assertTrue(cluster.nodes.get(i).stdout().contains("Cluster Bootstrap (kubernetes-api discovery)"),
            cluster.nodes.get(i).output());
      }
      List<FakeKubernetesApi.Request> asked = api.requests();
      String selector = labels.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
          .collect(Collectors.joining(","));
      assertFalse(asked.isEmpty(), "the nodes asked the API");
      for (FakeKubernetesApi.Request r : asked) {
        assertEquals(new FakeKubernetesApi.Request(api.podListPath(), selector, true, 200, 3), r,
            "every request lists the pods of the namespace with the token and the manifest's labels");
      }

      // The cluster works: one key asked on every node at once is fetched from upstream once.
      List<CompletableFuture<HttpResponse<byte[]>>> responses = new ArrayList<>();
      for (int i = 0; i < 30; i++) {
        responses.add(Http.CLIENT.sendAsync(Http.get(cluster.base(i % 3) + "/up/k8s.bin"),
            HttpResponse.BodyHandlers.ofByteArray()));
      }
      assertTrue(arrived.await(60, TimeUnit.SECONDS), "the fetch reached the upstream");
      release.countDown();
      for (int i = 0; i < responses.size(); i++) {
        HttpResponse<byte[]> r = responses.get(i).get(90, TimeUnit.SECONDS);
        assertEquals(200, r.statusCode(), "request " + i + " on node " + (i % 3));
        assertArrayEquals(body, r.body(), "request " + i + " on node " + (i % 3) + " got the exact bytes");
      }
      assertEquals(1, upstream.requests("/k8s.bin"), "one upstream request for 30 clients on 3 nodes");
    } finally {
      release.countDown();
    }
  }

  /** Node {@code i} sees exactly 3 members, all Up, none unreachable. */
  private static boolean membersUp(CorralCluster cluster, int i) {
    String json = members(cluster, i);
    return count(MEMBER, json) == 3 && count(UP, json) == 3 && json.contains("\"unreachable\":[]");
  }

  /** Node {@code i}'s view of the membership, from its management endpoint on its pod IP. */
  private static String members(CorralCluster cluster, int i) {
    try {
      HttpResponse<byte[]> r = Http.getBytes("http://" + POD_IPS.get(i) + ":" + cluster.managementPorts.get(i)
          + "/cluster/members");
      return new String(r.body(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "(" + e + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "(interrupted)";
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

  /** The value of the env entry {@code name} of the manifest's container; fails when it has none. */
  private static String value(List<Map<String, Object>> env, String name) {
    return find(new ArrayList<>(env), "name", name).map(e -> String.valueOf(e.get("value")))
        .orElseThrow(() -> new AssertionError("the StatefulSet sets no " + name));
  }

  private static Map<String, String> strings(Map<String, Object> m) {
    Map<String, String> s = new LinkedHashMap<>();
    m.forEach((k, v) -> s.put(k, String.valueOf(v)));
    return s;
  }

  /** As {@link Postgres#freePort()}, on another loopback address. */
  private static int freePort(String address) throws IOException {
    CorralProcess.archiveFlags();
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new java.net.InetSocketAddress(InetAddress.getByName(address), 0), 1);
      return s.getLocalPort();
    }
  }
}
