package dev.corral.it;

import static dev.corral.it.Manifests.list;
import static dev.corral.it.Manifests.map;
import static dev.corral.it.Manifests.maps;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Who may connect to which port of a pod, as the NetworkPolicies of a manifest say (ingress
 * only): the policies selecting the pod add up; a pod no ingress policy selects takes
 * connections from anyone; a rule without ports covers every port, one without {@code from}
 * every source. Sources are named coarsely, which is all the deploy/ checks need.
 */
final class IngressSources {
  static final String ANYONE = "anyone";
  /** Pods labelled app=corral in the policy's namespace. */
  static final String CORRAL_PODS = "corral pods";
  /** Any pod of the namespace named monitoring. */
  static final String MONITORING = "monitoring namespace";

  private final List<Manifests.Doc> policies;
  private final Map<String, Object> podLabels;

  IngressSources(List<Manifests.Doc> policies, Map<String, Object> podLabels) {
    this.policies = policies;
    this.podLabels = podLabels;
  }

  /** For each port of {@code container}, who may connect to it. */
  Map<Integer, Set<String>> byPort(Map<String, Object> container) {
    Map<Integer, Set<String>> out = new TreeMap<>();
    List<Integer> ports = maps(list(container, "ports")).stream().map(p -> (Integer) p.get("containerPort")).toList();
    List<Manifests.Doc> selecting = policies.stream().filter(this::selectsThePod).toList();
    for (int port : ports) {
      Set<String> sources = new TreeSet<>();
      if (selecting.isEmpty()) {
        sources.add(ANYONE);
      }
      for (Manifests.Doc policy : selecting) {
        for (Map<String, Object> rule : maps(list(policy.body(), "spec", "ingress"))) {
          List<Map<String, Object>> rulePorts = maps(list(rule, "ports"));
          boolean covers = rulePorts.isEmpty() || rulePorts.stream()
              .anyMatch(p -> p.get("port") == null || Manifests.resolvePort(container, p.get("port")) == port);
          if (!covers) {
            continue;
          }
          List<Map<String, Object>> from = maps(list(rule, "from"));
          if (from.isEmpty()) {
            sources.add(ANYONE);
          }
          from.forEach(peer -> sources.add(name(peer)));
        }
      }
      out.put(port, sources);
    }
    return out;
  }

  private boolean selectsThePod(Manifests.Doc policy) {
    Map<String, Object> spec = map(policy.body(), "spec");
    List<Object> types = list(spec, "policyTypes");
    boolean ingress = types.isEmpty() || types.contains("Ingress");
    Map<String, Object> selector = map(spec, "podSelector");
    return ingress && list(selector, "matchExpressions").isEmpty()
        && podLabels.entrySet().containsAll(map(selector, "matchLabels").entrySet());
  }

  private static String name(Map<String, Object> peer) {
    Map<String, Object> pods = map(peer, "podSelector");
    Map<String, Object> namespaces = map(peer, "namespaceSelector");
    if (peer.containsKey("ipBlock")) {
      return "ipBlock " + peer.get("ipBlock");
    }
    if (peer.containsKey("podSelector") && !peer.containsKey("namespaceSelector")
        && pods.equals(Map.of("matchLabels", Map.of("app", "corral")))) {
      return CORRAL_PODS;
    }
    if (peer.containsKey("namespaceSelector") && !peer.containsKey("podSelector")
        && namespaces.equals(Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "monitoring")))) {
      return MONITORING;
    }
    return "other " + peer;
  }
}
