package dev.corral.server;

import ch.qos.logback.classic.LoggerContext;
import dev.corral.http.metrics.Metrics;
import io.prometheus.metrics.core.metrics.Info;
import org.slf4j.LoggerFactory;

/** Shows the node's name in every log line ({@code %property{corral.node}}) and as a metric. */
final class NodeName {
  static final String LOG_PROPERTY = "corral.node";

  private NodeName() {}

  /** The name in the logs from now on (process-wide: several nodes in one test JVM share it). */
  static void set(String name) {
    if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
      context.putProperty(LOG_PROPERTY, name);
    }
  }

  /** {@code corral_node_info{node="NAME"} 1} in the node's registry. */
  static void register(Metrics metrics, String name) {
    Info.builder()
        .name("corral_node_info")
        .help("The node's name (--node-name, else its cluster host:port), always 1")
        .labelNames("node")
        .register(metrics.registry())
        .setLabelValues(name);
  }
}
