package dev.corral.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigList;
import com.typesafe.config.ConfigObject;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import dev.corral.cluster.ClusterJoin;
import dev.corral.cluster.ClusterSettings;

/** {@code --discovery config}'s contact points, checked before the node binds or creates anything. */
final class ConfigDiscovery {
  private ConfigDiscovery() {}

  /**
   * Cluster Bootstrap through config discovery takes its contact points from the configuration
   * alone ({@code pekko.discovery.config.services.<service>.endpoints}, {@code <service>} being
   * Cluster Bootstrap's effective service name, {@code corral} unless Pekko settings rename it).
   * Without any, the node would look for them for ever and never be ready: an error of {@code
   * --discovery}, found before anything is bound or created. Checked on the node's whole Pekko
   * configuration ({@code pekko}), the one its actor system gets.
   */
  static void check(Config pekko, ClusterSettings cluster) {
    if (cluster.discovery() == ClusterSettings.Discovery.NONE) {
      return;
    }
    String bootstrap = "pekko.management.cluster.bootstrap.contact-point-discovery.";
    String method = definedOr(pekko, bootstrap + "discovery-method", "");
    if (method.equals("pekko.discovery")) { // the default method of Pekko Discovery
      method = definedOr(pekko, "pekko.discovery.method", "");
    }
    if (!method.equals("config")) {
      return; // raw Pekko settings chose another method
    }
    String service = definedOr(pekko, bootstrap + "effective-name", null);
    if (service == null) {
      service = definedOr(pekko, bootstrap + "service-name", ClusterJoin.SYSTEM_NAME);
      String namespace = definedOr(pekko, bootstrap + "service-namespace", null);
      service = namespace == null ? service : service + "." + namespace;
    }
    String services = definedOr(pekko, "pekko.discovery.config.services-path", "pekko.discovery.config.services");
    String path = services + "." + ConfigUtil.joinPath(service, "endpoints");
    String problem = endpointsProblem(pekko, services, service);
    if (problem != null) {
      throw new SettingsException(Setting.DISCOVERY.flag(), "config discovery takes its contact points from " + path
          + ", " + problem + "; list the nodes' management endpoints there in the --config file, e.g. " + path
          + " = [{ host = \"127.0.0.1\", port = 7626 }, { host = \"127.0.0.1\", port = 7636 }]");
    }
  }

  /** What is wrong with the endpoints of {@code service} under {@code services}; null if nothing. */
  private static String endpointsProblem(Config pekko, String services, String service) {
    ConfigValue endpoints;
    try {
      ConfigValue entry = pekko.hasPath(services) ? pekko.getObject(services).get(service) : null;
      endpoints = entry instanceof ConfigObject o ? o.get("endpoints") : null;
    } catch (ConfigException e) {
      endpoints = null;
    }
    if (endpoints == null) {
      return "which is not set";
    }
    if (!(endpoints instanceof ConfigList list)) {
      return "which is not a list of endpoints";
    }
    if (list.isEmpty()) {
      return "which is empty";
    }
    for (int i = 0; i < list.size(); i++) {
      ConfigValue host =
          list.get(i) instanceof ConfigObject endpoint ? endpoint.get("host") : null;
      if (host == null || (host.valueType() != ConfigValueType.STRING
          && host.valueType() != ConfigValueType.NUMBER) || host.unwrapped().toString().isBlank()) {
        return "whose entry " + (i + 1) + " has no host";
      }
    }
    return null;
  }

  /** The string at {@code path}; {@code fallback} when unset, empty or one of Pekko's {@code <placeholders>}. */
  private static String definedOr(Config config, String path, String fallback) {
    if (!config.hasPath(path)) {
      return fallback;
    }
    String value;
    try {
      value = config.getString(path).trim();
    } catch (ConfigException e) {
      return fallback;
    }
    return value.isEmpty() || (value.startsWith("<") && value.endsWith(">")) ? fallback : value;
  }
}
