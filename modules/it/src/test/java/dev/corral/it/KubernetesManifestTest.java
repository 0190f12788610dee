package dev.corral.it;

import static dev.corral.it.Manifests.containerPort;
import static dev.corral.it.Manifests.containers;
import static dev.corral.it.Manifests.env;
import static dev.corral.it.Manifests.find;
import static dev.corral.it.Manifests.list;
import static dev.corral.it.Manifests.map;
import static dev.corral.it.Manifests.maps;
import static dev.corral.it.Manifests.podTemplate;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.corral.server.CorralServer;
import dev.corral.server.Setting;
import dev.corral.testkit.TestNode;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The invariants of {@code deploy/kubernetes} that an operator relies on when applying it as it
 * is (issue 12): the store on a claim per pod, which Service exposes which port, who may reach
 * which port, the pods' security context, probes on routes the server answers, no shipped
 * secret, JVM memory flags, and a grace period that covers the drain.
 */
class KubernetesManifestTest {
  /** What the cluster hand-off after the drain may take (shards moved, member removed). */
  private static final Duration HAND_OFF_MARGIN = Duration.ofSeconds(10);

  private static Manifests manifests;
  private static Manifests.Doc corral;
  private static Map<String, Object> container;

  @BeforeAll
  static void read() throws Exception {
    manifests = Manifests.read(Manifests.directory());
    corral = manifests.one("StatefulSet", "corral");
    container = find(list(podTemplate(corral), "spec", "containers"), "name", "corral")
        .orElseThrow(() -> new AssertionError("no container corral in " + corral));
  }

  @Test
  void kustomizationAppliesEveryManifestButTheCertManagerExample() throws Exception {
    Set<String> applied = manifests.applied().stream().map(Manifests.Doc::file).collect(Collectors.toCollection(TreeSet::new));
    try (Stream<Path> files = Files.list(manifests.dir())) {
      Set<String> present = files.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml"))
          .filter(n -> !n.equals("kustomization.yaml") && !n.equals("cert-manager.yaml"))
          .collect(Collectors.toCollection(TreeSet::new));
      assertEquals(present, applied, "kustomization.yaml must list every manifest");
    }
    assertTrue(manifests.applied("Deployment").isEmpty(), "the nodes are a StatefulSet, not a Deployment");
  }

  @Test
  void theStoreIsOnAVolumeClaimPerPodMountedAtTheDataDir() {
    String dataDir = env(container, Setting.DATA_DIR.env()).orElseThrow();
    Map<String, Object> mount = find(list(container, "volumeMounts"), "mountPath", dataDir)
        .orElseThrow(() -> new AssertionError("nothing mounted at the data dir " + dataDir));
    Map<String, Object> claim = maps(list(corral.body(), "spec", "volumeClaimTemplates")).stream()
        .filter(c -> mount.get("name").equals(map(c, "metadata").get("name"))).findFirst()
        .orElseThrow(() -> new AssertionError("the data dir's volume " + mount.get("name") + " is not a volumeClaimTemplate"));
    assertTrue(find(list(podTemplate(corral), "spec", "volumes"), "name", mount.get("name")).isEmpty(),
        "the pod template must not also define volume " + mount.get("name") + " (it would shadow the claim)");
    assertEquals(List.of("ReadWriteOnce"), list(claim, "spec", "accessModes"));
    long claimBytes = bytes(String.valueOf(map(claim, "spec", "resources", "requests").get("storage")));
    long maxSize = bytes(env(container, Setting.MAX_SIZE.env()).orElseThrow());
    assertTrue(maxSize < claimBytes, "--max-size " + maxSize + " must fit in the claim's " + claimBytes + " bytes");
    // Bootstrap forms a cluster from two contact points and a pod is ready once it is a member.
    assertEquals("Parallel", map(corral.body(), "spec").get("podManagementPolicy"));
  }

  @Test
  void theClientServiceExposesOnlyHttpAndTheHeadlessOneTheClusterPorts() {
    assertEquals(env(container, Setting.HTTP_PORT.env()).map(Integer::valueOf), containerPort(container, "http"));
    assertEquals(env(container, Setting.CLUSTER_PORT.env()).map(Integer::valueOf), containerPort(container, "remoting"));
    assertEquals(env(container, Setting.MANAGEMENT_PORT.env()).map(Integer::valueOf), containerPort(container, "management"));
    assertEquals(env(container, Setting.PEER_PORT.env()).map(Integer::valueOf), containerPort(container, "peer"));

    String headlessName = String.valueOf(map(corral.body(), "spec").get("serviceName"));
    Map<String, Object> headless = map(manifests.one("Service", headlessName).body(), "spec");
    assertEquals("None", headless.get("clusterIP"), "the StatefulSet's service must be headless");
    assertEquals(Map.of("app", "corral"), headless.get("selector"));
    assertTrue(find(list(headless, "ports"), "targetPort", "management").isPresent(), headless.toString());

    List<Manifests.Doc> clientServices = manifests.applied("Service").stream()
        .filter(s -> !"None".equals(map(s.body(), "spec").get("clusterIP"))).toList();
    assertEquals(1, clientServices.size(), clientServices.toString());
    Map<String, Object> client = map(clientServices.get(0).body(), "spec");
    assertEquals(Map.of("app", "corral"), client.get("selector"));
    List<Object> targets = maps(list(client, "ports")).stream().map(p -> p.get("targetPort")).toList();
    assertEquals(List.of("http"), targets, "the client Service exposes the HTTP port and nothing else");
  }

  @Test
  void networkPoliciesLetOnlyCorralPodsOnTheClusterPortsAndMonitoringOnManagement() {
    Map<Integer, Set<String>> sources = new IngressSources(manifests.applied("NetworkPolicy"), Map.of("app", "corral"))
        .byPort(container);
    int http = containerPort(container, "http").orElseThrow();
    int remoting = containerPort(container, "remoting").orElseThrow();
    int peer = containerPort(container, "peer").orElseThrow();
    int management = containerPort(container, "management").orElseThrow();
    assertEquals(Set.of(IngressSources.ANYONE), sources.get(http), "clients reach the HTTP port");
    assertEquals(Set.of(IngressSources.CORRAL_PODS), sources.get(remoting), "the cluster port: " + sources);
    assertEquals(Set.of(IngressSources.CORRAL_PODS), sources.get(peer), "the peer port: " + sources);
    // Corral pods: Cluster Bootstrap probes the other pods' management endpoints.
    assertEquals(Set.of(IngressSources.CORRAL_PODS, IngressSources.MONITORING), sources.get(management),
        "the management port: " + sources);
  }

  @Test
  void everyContainerRunsUnprivilegedOnAReadOnlyRootWithATmpVolume() {
    List<Manifests.Doc> workloads = manifests.all().stream()
        .filter(d -> Set.of("StatefulSet", "Deployment", "Job", "DaemonSet").contains(d.kind())).toList();
    assertTrue(workloads.size() >= 2, workloads.toString());
    for (Manifests.Doc w : workloads) {
      Map<String, Object> podSpec = map(podTemplate(w), "spec");
      Map<String, Object> pod = map(podSpec, "securityContext");
      assertNotEquals(true, podSpec.get("hostNetwork"), w.toString());
      for (Map<String, Object> c : containers(w)) {
        String what = w + " container " + c.get("name");
        Map<String, Object> sc = map(c, "securityContext");
        assertEquals(true, sc.getOrDefault("runAsNonRoot", pod.get("runAsNonRoot")), what + ": runAsNonRoot");
        assertNotEquals(0, sc.getOrDefault("runAsUser", pod.get("runAsUser")), what + ": runAsUser");
        assertEquals(true, sc.get("readOnlyRootFilesystem"), what + ": readOnlyRootFilesystem");
        assertEquals(false, sc.get("allowPrivilegeEscalation"), what + ": allowPrivilegeEscalation");
        assertNotEquals(true, sc.get("privileged"), what + ": privileged");
        assertEquals(List.of("ALL"), list(sc, "capabilities", "drop"), what + ": capabilities.drop");
        assertEquals(List.of(), list(sc, "capabilities", "add"), what + ": capabilities.add");
        Map<String, Object> seccomp = map(sc, "seccompProfile").isEmpty() ? map(pod, "seccompProfile") : map(sc, "seccompProfile");
        assertEquals("RuntimeDefault", seccomp.get("type"), what + ": seccompProfile");
        Map<String, Object> tmp = find(list(c, "volumeMounts"), "mountPath", "/tmp")
            .orElseThrow(() -> new AssertionError(what + ": nothing writable at /tmp"));
        Map<String, Object> volume = find(list(podSpec, "volumes"), "name", tmp.get("name")).orElseThrow();
        assertTrue(volume.containsKey("emptyDir"), what + ": /tmp is an emptyDir");
      }
    }
  }

  @Test
  void probesAskForRoutesTheServerAnswers(@TempDir Path temp) throws Exception {
    List<Map<String, Object>> probes = Stream.of("startupProbe", "readinessProbe", "livenessProbe")
        .map(p -> map(container, p, "httpGet")).toList();
    assertFalse(map(container, "readinessProbe", "httpGet").isEmpty(), "a readiness probe");
    assertFalse(map(container, "livenessProbe", "httpGet").isEmpty(), "a liveness probe");
    assertEquals("/-/health/ready", map(container, "readinessProbe", "httpGet").get("path"),
        "readiness must follow membership and the drain");
    HttpClient client = TestNode.client();
    try (CorralServer node = TestNode.start(temp, "http://127.0.0.1:1/", "")) {
      for (Map<String, Object> probe : probes.stream().filter(p -> !p.isEmpty()).toList()) {
        assertEquals(containerPort(container, "http").orElseThrow(), Manifests.resolvePort(container, probe.get("port")));
        String path = String.valueOf(probe.get("path"));
        assertEquals(200, TestNode.get(client, node, path).statusCode(), "probe path " + path);
      }
      // The check above can fail: a path the server does not serve is not 200.
      assertEquals(404, TestNode.get(client, node, "/-/health/alive").statusCode());
    }
  }

  @Test
  void noSecretIsShippedAndTheOnesMountedAreCreatedOrIssued() {
    for (Manifests.Doc d : manifests.all()) {
      assertNotEquals("Secret", d.kind(), d + ": a shipped Secret is a default password");
      for (Map<String, Object> c : containers(d)) {
        for (Map<String, Object> e : maps(list(c, "env"))) {
          String name = String.valueOf(e.get("name"));
          assertFalse((name.contains("PASSWORD") || name.contains("TOKEN")) && !name.endsWith("_FILE"),
              d + ": " + name + " puts a secret in the environment; mount a file");
        }
      }
    }
    Set<String> mounted = maps(list(podTemplate(corral), "spec", "volumes")).stream()
        .map(v -> map(v, "secret").get("secretName")).filter(n -> n != null).map(String::valueOf).collect(Collectors.toSet());
    assertEquals(Set.of("corral-journal", "corral-cluster-tls"), mounted);
    Set<String> issued = manifests.all().stream().filter(d -> d.kind().equals("Certificate"))
        .map(d -> String.valueOf(map(d.body(), "spec").get("secretName"))).collect(Collectors.toSet());
    assertTrue(issued.contains("corral-cluster-tls"), "cert-manager.yaml issues the cluster TLS Secret: " + issued);
    String tlsDir = env(container, Setting.CLUSTER_TLS_DIR.env()).orElseThrow();
    Map<String, Object> tlsMount = find(list(container, "volumeMounts"), "mountPath", tlsDir).orElseThrow();
    assertEquals("corral-cluster-tls", map(find(list(podTemplate(corral), "spec", "volumes"), "name",
        tlsMount.get("name")).orElseThrow(), "secret").get("secretName"));
  }

  @Test
  void theHeapFollowsTheMemoryLimitAndAnOutOfMemoryErrorEndsTheProcess() {
    for (Manifests.Doc w : List.of(corral, manifests.one("Job", "corral-db-init"))) {
      for (Map<String, Object> c : containers(w)) {
        List<String> opts = Arrays.asList(env(c, "JAVA_OPTS").orElse("").split("\\s+"));
        assertTrue(opts.stream().anyMatch(o -> o.startsWith("-XX:MaxRAMPercentage=")), w + ": " + opts);
        assertTrue(opts.contains("-XX:+ExitOnOutOfMemoryError"), w + ": " + opts);
        assertFalse(opts.stream().anyMatch(o -> o.startsWith("-Xmx")), w + ": -Xmx would ignore the limit");
        Object limit = map(c, "resources", "limits").get("memory");
        assertTrue(limit != null, w + ": a memory limit");
        assertEquals(limit, map(c, "resources", "requests").get("memory"), w + ": requests = limits for memory");
      }
    }
  }

  @Test
  void theGracePeriodCoversThePreStopTheDrainAndTheHandOff() {
    Map<String, Object> podSpec = map(podTemplate(corral), "spec");
    List<Object> preStop = list(container, "lifecycle", "preStop", "exec", "command");
    assertEquals("sleep", preStop.isEmpty() ? null : preStop.get(0), "preStop: " + preStop);
    Duration sleep = Duration.ofSeconds(Long.parseLong(String.valueOf(preStop.get(1))));
    Duration drain = duration(env(container, Setting.DRAIN_TIMEOUT.env())
        .orElse(Setting.DRAIN_TIMEOUT.defaultValue().orElseThrow()));
    Duration grace = Duration.ofSeconds(((Number) podSpec.get("terminationGracePeriodSeconds")).longValue());
    assertTrue(grace.compareTo(sleep.plus(drain).plus(HAND_OFF_MARGIN)) >= 0,
        "terminationGracePeriodSeconds " + grace + " < preStop " + sleep + " + drain " + drain + " + " + HAND_OFF_MARGIN);
  }

  @Test
  void oneVoluntaryDisruptionAtATimeAndPodsSpreadOverMachines() {
    List<Manifests.Doc> budgets = manifests.applied("PodDisruptionBudget");
    assertEquals(1, budgets.size());
    assertEquals(1, map(budgets.get(0).body(), "spec").get("maxUnavailable"));
    assertEquals(Map.of("app", "corral"), map(budgets.get(0).body(), "spec", "selector", "matchLabels"));
    List<Map<String, Object>> terms = maps(list(podTemplate(corral), "spec", "affinity", "podAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution")).stream().map(t -> map(t, "podAffinityTerm")).toList();
    assertTrue(terms.stream().anyMatch(t -> "kubernetes.io/hostname".equals(t.get("topologyKey"))
        && Map.of("app", "corral").equals(map(t, "labelSelector", "matchLabels"))), terms.toString());
  }

  @Test
  void discoveryFindsTheNodesAndOnlyThem() {
    assertEquals("kubernetes-api", env(container, Setting.DISCOVERY.env()).orElseThrow());
    assertEquals(Map.of("app", "corral"), map(podTemplate(corral), "metadata", "labels"),
        "kubernetes-api discovery lists the pods labelled app=corral");
    for (Manifests.Doc job : manifests.applied("Job")) {
      assertNotEquals("corral", map(podTemplate(job), "metadata", "labels").get("app"), job + " is no contact point");
    }
    Manifests.Doc role = manifests.one("Role", "corral-pod-reader");
    // Least privilege: discovery makes one call, a list of the labelled pods.
    assertEquals(List.of(Map.of("apiGroups", List.of(""), "resources", List.of("pods"), "verbs", List.of("list"))),
        maps(list(role.body(), "rules")), role.toString());
    assertEquals("corral", map(podTemplate(corral), "spec").get("serviceAccountName"));
  }

  @Test
  void everySettingInTheManifestsIsOneTheServerKnows() {
    Set<String> known = Arrays.stream(Setting.values()).map(Setting::env).collect(Collectors.toSet());
    for (Manifests.Doc w : manifests.applied()) {
      for (Map<String, Object> c : containers(w)) {
        for (Map<String, Object> e : maps(list(c, "env"))) {
          String name = String.valueOf(e.get("name"));
          assertTrue(!name.startsWith("CORRAL_") || known.contains(name), w + ": unknown setting " + name);
        }
      }
    }
  }

  @Test
  void theImageIsBuiltFromSourceAndRunsAsAnUnprivilegedUserWithAHealthCheck() throws Exception {
    List<String> lines = Files.readAllLines(CorralProcess.repoRoot().resolve("deploy/Dockerfile"));
    List<String> from = lines.stream().filter(l -> l.startsWith("FROM ")).toList();
    assertEquals(2, from.size(), "a build stage and a runtime stage: " + from);
    assertTrue(from.get(0).contains("maven") && from.get(0).endsWith(" AS build"), from.get(0));
    assertTrue(from.get(1).contains("-jre"), "the runtime stage needs only a JRE: " + from.get(1));
    assertTrue(lines.stream().anyMatch(l -> l.startsWith("COPY --from=build ")), "the jar comes from the build stage");
    List<String> users = lines.stream().filter(l -> l.startsWith("USER ")).toList();
    assertEquals(1, users.size(), users.toString());
    String uid = users.get(0).substring(5).split(":")[0];
    assertTrue(uid.matches("[1-9][0-9]*"), "a numeric, non-root user (runAsNonRoot checks it): " + users.get(0));
    assertEquals(String.valueOf(map(podTemplate(corral), "spec", "securityContext").get("runAsUser")), uid,
        "the pods run as the image's user");
    String health = String.join("\n", lines.subList(
        lines.indexOf(lines.stream().filter(l -> l.startsWith("HEALTHCHECK ")).findFirst().orElseThrow()), lines.size()));
    assertTrue(health.contains("/-/health/live"), "HEALTHCHECK on the live route: " + health);
  }

  @Test
  void theClusterAndPeerPortsAreTlsWithTheIssuedCertificateAndNeverInsecure() throws Exception {
    // The pod's cluster host is its IP, so without the TLS directory the node would refuse to start.
    assertTrue(env(container, Setting.CLUSTER_TLS_DIR.env()).isPresent());
    assertEquals(Optional.empty(), env(container, Setting.CLUSTER_INSECURE.env()));
    assertEquals(String.valueOf(ClusterSettingsDefaults.PEER_PORT), env(container, Setting.PEER_PORT.env()).orElseThrow(),
        "the manifests use the default peer port, which the Dockerfile exposes");
    Map<String, Object> cert = map(Manifests.load(Manifests.directory().resolve("cert-manager.yaml")).stream()
        .filter(d -> "Certificate".equals(d.kind()) && "corral-cluster-tls".equals(d.name()))
        .findFirst().orElseThrow().body(), "spec");
    assertEquals("RSA", map(cert, "privateKey").get("algorithm"), "Pekko's TLS provider reads RSA keys only");
    assertTrue(list(cert, "usages").containsAll(List.of("server auth", "client auth")), cert.toString());

    Path deploy = CorralProcess.repoRoot().resolve("deploy");
    Map<String, Object> compose = Manifests.load(deploy.resolve("docker-compose.yml")).get(0).body();
    for (String node : List.of("corral-1", "corral-2", "corral-3")) {
      Map<String, Object> environment = map(Manifests.cast(map(compose, "services").get(node)), "environment");
      String tlsDir = String.valueOf(environment.get(Setting.CLUSTER_TLS_DIR.env()));
      assertTrue(tlsDir.startsWith("/"), node + ": " + environment);
      assertEquals(String.valueOf(ClusterSettingsDefaults.PEER_PORT), String.valueOf(environment.get(Setting.PEER_PORT.env())), node);
      assertFalse(environment.containsKey(Setting.CLUSTER_INSECURE.env()), node);
      assertTrue(list(Manifests.cast(map(compose, "services").get(node)), "volumes").stream()
          .anyMatch(v -> String.valueOf(v).endsWith(":" + tlsDir + ":ro")), node + " mounts the TLS directory");
    }
    List<String> dockerfile = Files.readAllLines(deploy.resolve("Dockerfile"));
    assertTrue(dockerfile.stream().anyMatch(l -> l.startsWith("EXPOSE ") && l.contains(" " + ClusterSettingsDefaults.PEER_PORT)),
        "the image exposes the peer port");
  }

  /** The built-in default of --peer-port, as corral-defaults.conf writes it. */
  private static final class ClusterSettingsDefaults {
    static final int PEER_PORT = Integer.parseInt(Setting.PEER_PORT.defaultValue().orElseThrow());
  }

  @Test
  void composeShipsNoPasswordAndReadsItFromAFileTheOperatorCreates() throws Exception {
    Path deploy = CorralProcess.repoRoot().resolve("deploy");
    Map<String, Object> compose = Manifests.load(deploy.resolve("docker-compose.yml")).get(0).body();
    for (Map.Entry<String, Object> service : map(compose, "services").entrySet()) {
      Map<String, Object> environment = map(Manifests.cast(service.getValue()), "environment");
      for (String name : environment.keySet()) {
        assertFalse(name.contains("PASSWORD") && !name.endsWith("_FILE"), service.getKey() + ": " + name);
      }
    }
    Map<String, Object> secret = map(compose, "secrets", "journal-password");
    assertEquals("./journal-password.txt", secret.get("file"));
    assertTrue(Files.readAllLines(deploy.resolve(".gitignore")).contains("journal-password.txt"),
        "the operator's password file is never committed");
  }

  private static Duration duration(String text) {
    return ConfigFactory.parseString("d = " + text).getDuration("d");
  }

  /** A Kubernetes quantity (50Gi) or a Corral size (40GiB) in bytes: HOCON reads both. */
  private static long bytes(String text) {
    return ConfigFactory.parseString("s = " + text).getBytes("s");
  }
}
