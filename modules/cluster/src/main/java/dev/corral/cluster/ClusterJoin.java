package dev.corral.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.net.BindException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.Cluster;
import org.apache.pekko.management.cluster.bootstrap.ClusterBootstrap;
import org.apache.pekko.management.javadsl.PekkoManagement;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a node becomes a cluster member, from {@link ClusterSettings}: it joins itself (no seed
 * nodes, no discovery: the one-node default), joins the seed nodes (Pekko does that from
 * {@code pekko.cluster.seed-nodes}), or runs Cluster Bootstrap, which finds its peers through
 * Pekko Discovery and probes their management endpoints before forming or joining a cluster.
 */
public final class ClusterJoin {
  private static final Logger log = LoggerFactory.getLogger(ClusterJoin.class);
  /** The actor system's name: part of every cluster address, so the same on every node. */
  public static final String SYSTEM_NAME = "corral";

  private ClusterJoin() {}

  /** The Pekko settings derived from the cluster settings (the rest is in corral-node.conf). */
  public static Config pekkoConfig(ClusterSettings c) {
    List<String> seeds = c.seedNodes().stream().map(s -> "pekko://" + SYSTEM_NAME + "@" + s).toList();
    Config config = ConfigFactory.empty()
        .withValue("pekko.remote.artery.canonical.hostname", ConfigValueFactory.fromAnyRef(c.host()))
        .withValue("pekko.remote.artery.canonical.port", ConfigValueFactory.fromAnyRef(c.port()))
        .withValue("pekko.cluster.seed-nodes", ConfigValueFactory.fromIterable(seeds))
        // Pekko refuses a node that joins with another number (its typed sharding's join check).
        .withValue("pekko.cluster.sharding.number-of-shards", ConfigValueFactory.fromAnyRef(c.shards()));
    if (c.tls().isPresent()) {
      config = config.withFallback(c.tls().get().pekkoConfig());
    }
    if (c.managementEnabled()) {
      config = config
          .withValue("pekko.management.http.hostname", ConfigValueFactory.fromAnyRef(c.managementHost()))
          .withValue("pekko.management.http.port", ConfigValueFactory.fromAnyRef(c.effectiveManagementPort()));
    }
    if (c.discovery() != ClusterSettings.Discovery.NONE) {
      config = config.withValue("pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method",
          ConfigValueFactory.fromAnyRef(c.discovery().text()));
    }
    if (c.discovery() == ClusterSettings.Discovery.CONFIG) {
      // Local runs put several nodes on one host, on different management ports; by default
      // bootstrap keeps only contact points on its own management port (one per pod in Kubernetes).
      config = config.withValue("pekko.management.cluster.bootstrap.contact-point.filter-on-fallback-port",
          ConfigValueFactory.fromAnyRef(false));
    }
    if (c.discovery() == ClusterSettings.Discovery.KUBERNETES_API) {
      // The pods' management port is found by its name in the pod spec (deploy/kubernetes).
      config = config.withValue("pekko.management.cluster.bootstrap.contact-point-discovery.port-name",
          ConfigValueFactory.fromAnyRef("management"));
    }
    return config;
  }

  /**
   * The node's actor system; a cluster port that cannot be bound (in use, or an address not on
   * this machine) is a start-up error naming the setting.
   */
  public static ActorSystem<Void> createSystem(Config config, ClusterSettings c) {
    try {
      return ActorSystem.create(Behaviors.empty(), SYSTEM_NAME, config);
    } catch (RuntimeException e) {
      if (causes(e, BindException.class)) {
        throw new CannotListen(CannotListen.Port.CLUSTER,
            "cannot listen on " + c.host() + ":" + c.port() + " (" + rootMessage(e) + ")");
      }
      throw e;
    }
  }

  /**
   * A port of the cluster settings cannot be bound (in use, or an address not on this machine);
   * the server reports it as an error of the setting that named the port.
   */
  public static final class CannotListen extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Which of the node's cluster ports. */
    public enum Port { CLUSTER, MANAGEMENT, PEER }

    private final Port port;

    CannotListen(Port port, String problem) {
      super(problem, null, false, false);
      this.port = port;
    }

    public Port port() {
      return port;
    }
  }

  static boolean causes(Throwable e, Class<? extends Throwable> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return true;
      }
    }
    return false;
  }

  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) {
      t = t.getCause();
    }
    return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
  }

  /**
   * Starts the management endpoints (when configured) and the join. Returns a future completed
   * when this node is an Up member.
   */
  public static CompletableFuture<Done> start(ActorSystem<?> system, ClusterSettings c) throws Exception {
    Cluster cluster = Cluster.get(system.classicSystem());
    CompletableFuture<Done> up = new CompletableFuture<>();
    cluster.registerOnMemberUp(() -> {
      log.info("node {} is Up in a cluster of {} member(s)", cluster.selfAddress(), cluster.state().members().size());
      up.complete(Done.getInstance());
    });
    if (c.managementEnabled()) {
      String uri;
      try {
        uri = PekkoManagement.get(system.classicSystem()).start()
            .toCompletableFuture().get(30, TimeUnit.SECONDS).toString();
      } catch (ExecutionException e) {
        if (causes(e, BindException.class)) {
          throw new CannotListen(CannotListen.Port.MANAGEMENT, "cannot listen on " + c.managementHost()
              + ":" + c.effectiveManagementPort() + " (" + rootMessage(e) + ")");
        }
        throw e;
      }
      log.info("management endpoints on {}", uri);
    }
    boolean seedsInPekkoConfig = !system.settings().config().getStringList("pekko.cluster.seed-nodes").isEmpty();
    if (c.selfJoin() && !seedsInPekkoConfig) { // seed nodes may also come as raw Pekko settings
      cluster.join(cluster.selfAddress());
    } else if (c.discovery() != ClusterSettings.Discovery.NONE) {
      ClusterBootstrap.get(system.classicSystem()).start();
      log.info("looking for peers through Cluster Bootstrap ({} discovery)", c.discovery().text());
    } else {
      log.info("joining the seed nodes {}", c.seedNodes());
    }
    return up;
  }

  /** The node's cluster host:port as bound (the port is known only now when 0 was asked for). */
  public static String selfHostPort(ActorSystem<?> system) {
    Address a = Cluster.get(system.classicSystem()).selfAddress();
    return a.getHost().orElse("?") + ":" + a.getPort().map(String::valueOf).orElse("?");
  }
}
