package dev.corral.http.metrics;

import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The JVM's own metrics (heap and memory pools, GC pauses, threads, buffer pools: direct and
 * mapped, classes, compilation, process CPU and file descriptors) from the Prometheus client's
 * instrumentation, in one registry per process. Every node of the process shows it beside its own
 * registry: the JVM is one, however many nodes a test starts in it, and the instrumentation keeps
 * each registry it was given (and a GC listener for each) for the life of the process, so it is
 * given exactly one.
 */
final class JvmRegistry {
  private JvmRegistry() {}

  private static final class Holder {
    static final PrometheusRegistry REGISTRY = registered();

    private static PrometheusRegistry registered() {
      PrometheusRegistry registry = new PrometheusRegistry();
      JvmMetrics.builder().register(registry);
      return registry;
    }
  }

  static PrometheusRegistry get() {
    return Holder.REGISTRY;
  }
}
