package dev.corral.cluster;

import dev.corral.core.fetch.FanOut;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * How a node joins its cluster and where its management endpoints listen.
 *
 * @param host the canonical host peers reach this node's cluster port at
 * @param port the cluster (Artery) port; 0 picks a free one
 * @param seedNodes {@code HOST:PORT} of the nodes to join; empty with {@link Discovery#NONE}: the
 *     node forms a cluster of its own
 * @param nodeName the name given by the operator; without one the node is called by its
 *     cluster {@code host:port} once bound
 * @param managementPort empty: Pekko Management is not started
 * @param tls the cluster's identity: Artery over TLS and the peer port over HTTPS, both with
 *     client certificates from the cluster's CA; empty: plain TCP and HTTP
 * @param insecure the operator accepts a plain cluster port on a non-loopback host
 * @param peerPort the peer copy channel's port ({@link PeerPort}), bound to {@code host}; 0 picks
 *     a free one
 * @param shards the number of shards keys are spread over; a node joining with another number is
 *     refused
 * @param fanOut how copies between nodes are spread (issue 17)
 */
public record ClusterSettings(
    String host,
    int port,
    List<String> seedNodes,
    Discovery discovery,
    Optional<String> nodeName,
    String managementHost,
    OptionalInt managementPort,
    Optional<ClusterTls> tls,
    boolean insecure,
    int peerPort,
    int shards,
    FanOut fanOut) {

  /** More shards than this only cost memory and start-up time, whatever the cluster's size. */
  public static final int MAX_SHARDS = 100_000;

  /** The management port used when discovery needs the endpoints and no port is set. */
  public static final int DEFAULT_MANAGEMENT_PORT = 7626;

  /** Cluster Bootstrap's contact-point discovery, or none (seed nodes or a one-node cluster). */
  public enum Discovery {
    NONE("none"),
    CONFIG("config"),
    KUBERNETES_API("kubernetes-api");

    private final String text;

    Discovery(String text) {
      this.text = text;
    }

    /** The value as written in settings, which is also Pekko's discovery-method name. */
    public String text() {
      return text;
    }

    public static Optional<Discovery> parse(String text) {
      for (Discovery d : values()) {
        if (d.text.equals(text)) {
          return Optional.of(d);
        }
      }
      return Optional.empty();
    }
  }

  public ClusterSettings {
    Objects.requireNonNull(host, "host");
    Objects.requireNonNull(discovery, "discovery");
    Objects.requireNonNull(nodeName, "nodeName");
    Objects.requireNonNull(managementHost, "managementHost");
    Objects.requireNonNull(managementPort, "managementPort");
    Objects.requireNonNull(tls, "tls");
    Objects.requireNonNull(fanOut, "fanOut");
    seedNodes = List.copyOf(seedNodes);
    if (shards < 1 || shards > MAX_SHARDS) {
      throw new IllegalArgumentException("shards must be 1.." + MAX_SHARDS + ": " + shards);
    }
  }

  /** Whether Pekko Management runs: a port was set, or bootstrap needs its contact point. */
  public boolean managementEnabled() {
    return managementPort.isPresent() || discovery != Discovery.NONE;
  }

  /** The management port to bind when {@link #managementEnabled()}. */
  public int effectiveManagementPort() {
    return managementPort.orElse(DEFAULT_MANAGEMENT_PORT);
  }

  /** Whether the node joins itself (no seed nodes, no discovery): today's one-node behaviour. */
  public boolean selfJoin() {
    return seedNodes.isEmpty() && discovery == Discovery.NONE;
  }

  /**
   * Why this node must not start, or empty: a cluster host that is not a loopback address (after
   * resolution; a name that does not resolve counts as not loopback) needs the cluster's identity
   * ({@code tls}) or the operator's explicit {@code insecure}, since anyone who can reach a plain
   * cluster port can join the cluster and be handed fetches.
   */
  public Optional<String> exposureProblem() {
    if (tls.isPresent() || insecure || isLoopback(host)) {
      return Optional.empty();
    }
    return Optional.of("cluster host " + host + " is not a loopback address: anyone who reaches its cluster port"
        + " could join the cluster; give --cluster-tls-dir DIR (see corral tls init) or --cluster-insecure");
  }

  /** Whether every address {@code host} stands for is a loopback address (no lookup for a literal). */
  public static boolean isLoopback(String host) {
    String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    if (h.isBlank()) {
      return false;
    }
    try {
      InetAddress[] all = InetAddress.getAllByName(h);
      return all.length > 0 && Arrays.stream(all).allMatch(InetAddress::isLoopbackAddress);
    } catch (UnknownHostException | SecurityException e) {
      return false;
    }
  }
}
