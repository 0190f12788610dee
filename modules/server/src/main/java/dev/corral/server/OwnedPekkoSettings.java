package dev.corral.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigRenderOptions;
import com.typesafe.config.ConfigValue;
import dev.corral.cluster.ClusterSettings;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The Pekko settings Corral makes from its own (the cluster's address, seeds, shard count, TLS and
 * management endpoint, the connection limits, the drain), which the {@code pekko} section of a
 * {@code --config} file may sit beside but not contradict: its value would silently win over the
 * Corral setting the operator sees in {@code corral help}, and two of them (the cluster port's
 * transport, and the address it binds) would slip past the check that a cluster port other
 * machines can reach has the cluster's TLS or {@code --cluster-insecure}. That check is made here
 * again on the address Pekko will bind: {@code bind.hostname} when the file sets one (a container
 * binding every interface), the cluster host otherwise.
 */
final class OwnedPekkoSettings {
  private static final String LABEL = "--config";
  private static final String BIND_HOST = "pekko.remote.artery.bind.hostname";

  /** The Corral setting each owned path (or path prefix) comes from, for the error message. */
  private static final Map<String, String> FROM = new LinkedHashMap<>();

  static {
    FROM.put("pekko.remote.artery.canonical.hostname", Setting.CLUSTER_HOST.flag());
    FROM.put("pekko.remote.artery.canonical.port", Setting.CLUSTER_PORT.flag());
    FROM.put("pekko.cluster.seed-nodes", Setting.SEED_NODES.flag());
    FROM.put("pekko.cluster.sharding.number-of-shards", Setting.SHARDS.flag());
    FROM.put("pekko.remote.artery.transport", Setting.CLUSTER_TLS_DIR.flag());
    FROM.put("pekko.remote.artery.ssl.", Setting.CLUSTER_TLS_DIR.flag());
    FROM.put("pekko.management.http.hostname", Setting.MANAGEMENT_HOST.flag());
    FROM.put("pekko.management.http.port", Setting.MANAGEMENT_PORT.flag());
    FROM.put("pekko.management.cluster.bootstrap.", Setting.DISCOVERY.flag());
    FROM.put("pekko.http.server.idle-timeout", Setting.IDLE_TIMEOUT.flag());
    FROM.put("pekko.http.server.max-connections", Setting.MAX_CONNECTIONS.flag());
    FROM.put("pekko.coordinated-shutdown.phases.service-requests-done.timeout", Setting.DRAIN_TIMEOUT.flag());
  }

  private OwnedPekkoSettings() {}

  /**
   * Refuses a file whose {@code raw} settings contradict {@code owned} (Corral's, by path), or
   * whose cluster port would bind beyond loopback without TLS or {@code --cluster-insecure}.
   *
   * @param effective the node's whole configuration, as the actor system will get it
   */
  static void check(Config raw, Config owned, Config effective, ClusterSettings cluster) {
    for (Map.Entry<String, ConfigValue> e : owned.entrySet()) {
      String path = e.getKey();
      if (raw.hasPathOrNull(path) && !same(raw, owned, path)) {
        throw new SettingsException(LABEL, path + " = " + render(raw.getValue(path)) + " contradicts "
            + from(path) + " (" + render(e.getValue()) + "): set " + from(path)
            + " instead, and leave " + path + " out of the file");
      }
    }
    String bind = effective.hasPath(BIND_HOST) ? effective.getString(BIND_HOST).trim() : "";
    if (!bind.isEmpty() && cluster.tls().isEmpty() && !cluster.insecure() && !ClusterSettings.isLoopback(bind)) {
      throw new SettingsException(LABEL, BIND_HOST + " = " + bind + " is not a loopback address: anyone who"
          + " reaches the cluster port could join the cluster; give --cluster-tls-dir DIR (see corral tls init)"
          + " or --cluster-insecure");
    }
  }

  private static boolean same(Config raw, Config owned, String path) {
    if (raw.getIsNull(path)) {
      return false;
    }
    if (Objects.equals(raw.getValue(path).unwrapped(), owned.getValue(path).unwrapped())) {
      return true;
    }
    try { // "2 s" and "2000ms"
      return raw.getDuration(path).equals(owned.getDuration(path));
    } catch (ConfigException e) {
      return false;
    }
  }

  private static String from(String path) {
    return FROM.entrySet().stream()
        .filter(f -> f.getKey().endsWith(".") ? path.startsWith(f.getKey()) : path.equals(f.getKey()))
        .map(Map.Entry::getValue).findFirst().orElse("Corral's own settings");
  }

  private static String render(ConfigValue v) {
    return v.render(ConfigRenderOptions.concise());
  }
}
