package dev.corral.server;

import com.github.benmanes.caffeine.cache.Ticker;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import dev.corral.core.CancelRegistry;
import dev.corral.core.Metrics;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.FetchPolicy;
import dev.corral.core.fetch.KeyRecords;
import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Waiters;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.http.FrontDoor;
import dev.corral.http.PublicBase;
import dev.corral.http.repo.GenericRepository;
import dev.corral.http.repo.Repository;
import dev.corral.http.upstream.HttpUpstream;
import dev.corral.http.upstream.RepoUpstream;
import dev.corral.http.upstream.UpstreamSettings;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Corral node: the actor system (a one-node cluster by default), the store, the
 * upstream client, the fetch entities and the front door, wired from {@link CorralSettings}.
 */
public final class CorralServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(CorralServer.class);
  /** How long an idle fetch entity lives before it passivates. */
  static final Duration ENTITY_IDLE = Duration.ofSeconds(120);

  private final ActorSystem<Void> system;
  private final FrontDoor frontDoor;
  private final ServerBinding binding;
  private final Node node;
  private final CancelRegistry cancels;

  private CorralServer(ActorSystem<Void> system, FrontDoor frontDoor, ServerBinding binding, Node node,
      CancelRegistry cancels) {
    this.system = system;
    this.frontDoor = frontDoor;
    this.binding = binding;
    this.node = node;
    this.cancels = cancels;
  }

  /** Starts a node and returns once it listens and is ready. */
  public static CorralServer start(CorralSettings settings) throws Exception {
    Files.createDirectories(settings.dataDir());
    Path dataDir = settings.dataDir().toAbsolutePath().normalize();
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "corral", pekkoConfig(settings, dataDir));
    try {
      SchemaUtils.createIfNotExists(system).toCompletableFuture().get(60, TimeUnit.SECONDS);
      Cluster cluster = Cluster.get(system);
      cluster.manager().tell(Join.create(cluster.selfMember().address()));

      Metrics metrics = new Metrics();
      Executor io = system.dispatchers().lookup(DispatcherSelector.blocking());
      DiskStore store = DiskStore.open(dataDir.resolve("store"), settings.maxSizeBytes(), Clock.systemUTC());
      Map<String, RepoUpstream> upstreams = new HashMap<>();
      Map<String, FetchPolicy> policies = new HashMap<>();
      Map<String, Repository> repos = new LinkedHashMap<>();
      for (RepoSettings r : settings.repos()) {
        upstreams.put(r.name(), new RepoUpstream(r.url(), upstreamSettings(r)));
        policies.put(r.name(), policy(r));
        repos.put(r.name(), repository(r));
      }
      HttpUpstream upstream = new HttpUpstream(system, metrics, upstreams);
      Node node = new Node(store, new HotBlobs(settings.memoryCacheBytes()), KeyRecords.of(system), upstream, metrics,
          name -> policies.getOrDefault(name, FetchPolicy.defaults()), Ticker.systemTicker(), io);
      FetchEntity.init(system, node, ENTITY_IDLE);
      CancelRegistry cancels = new CancelRegistry(Ticker.systemTicker(), settings.tombstoneTtl(), 100_000);
      Waiters waiters = new Waiters(ClusterSharding.get(system), cancels, node);
      FrontDoor frontDoor = new FrontDoor(system, node, waiters, repos, settings.adminToken(),
          new PublicBase(settings.publicBaseUrl(), settings.trustedProxies()));
      ServerBinding binding = frontDoor.bind(settings.httpHost(), settings.httpPort())
          .toCompletableFuture().get(30, TimeUnit.SECONDS);
      CorralServer server = new CorralServer(system, frontDoor, binding, node, cancels);
      server.drainOnShutdown(settings.drainTimeout(), settings.repos().stream().map(RepoSettings::name).toList());
      frontDoor.ready(true);
      InetSocketAddress a = binding.localAddress();
      log.info("listening on http://{}:{}", a.getHostString(), a.getPort());
      return server;
    } catch (Exception | Error e) {
      system.terminate();
      throw e;
    }
  }

  /**
   * SEMANTICS L4: on SIGTERM (or {@link #close()}) stop taking requests, let in-flight fetches
   * and responses finish up to the drain timeout, then let sharding hand its shards off.
   *
   * <p>{@code binding.terminate} alone is not enough: it waits only for responses not yet begun
   * and cuts a connection whose streamed body is still being sent, and it knows nothing of
   * fetches whose waiters have left (C3). So the drain first waits, bounded by the drain timeout,
   * until no fetch runs on this node and no response body is streaming, then terminates the
   * binding with what is left of the timeout. The phase's own timeout is raised to match in
   * {@link #pekkoConfig}.
   */
  private void drainOnShutdown(Duration drainTimeout, List<String> repoNames) {
    CoordinatedShutdown cs = CoordinatedShutdown.get(system);
    cs.addTask(CoordinatedShutdown.PhaseServiceUnbind(), "corral-unbind", () -> {
      frontDoor.drain();
      return binding.unbind().thenApply(d -> Done.getInstance());
    });
    cs.addTask(CoordinatedShutdown.PhaseServiceRequestsDone(), "corral-drain", () -> {
      long deadline = System.nanoTime() + drainTimeout.toNanos();
      CompletableFuture<Done> idle = new CompletableFuture<>();
      awaitIdle(idle, deadline, repoNames);
      return idle.thenCompose(d -> binding.terminate(
              Duration.ofNanos(Math.max(deadline - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(100)))))
          .thenApply(t -> Done.getInstance());
    });
  }

  /** Completes {@code idle} once nothing is in flight, or at the deadline (checked every 50 ms). */
  private void awaitIdle(CompletableFuture<Done> idle, long deadline, List<String> repoNames) {
    double fetches = repoNames.stream().mapToDouble(r -> node.metrics().inflightFetches.labelValues(r).get()).sum();
    int streams = frontDoor.streamingResponses();
    if (fetches <= 0 && streams <= 0) {
      idle.complete(Done.getInstance());
    } else if (System.nanoTime() - deadline >= 0) {
      log.warn("drain timeout reached with {} fetches and {} responses still running; stopping anyway",
          (long) fetches, streams);
      idle.complete(Done.getInstance());
    } else {
      CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS)
          .execute(() -> awaitIdle(idle, deadline, repoNames));
    }
  }

  public InetSocketAddress address() {
    return binding.localAddress();
  }

  public ActorSystem<Void> system() {
    return system;
  }

  public Node node() {
    return node;
  }

  /** The node's cancel tokens: one registration per waiter currently waiting on a fetch. */
  public CancelRegistry cancels() {
    return cancels;
  }

  @Override
  public void close() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
  }

  static Config pekkoConfig(CorralSettings settings, Path dataDir) {
    String h2 = "jdbc:h2:file:" + dataDir.resolve("db").resolve("corral") + ";DB_CLOSE_ON_EXIT=FALSE;DATABASE_TO_UPPER=false";
    Config slick = ConfigFactory.parseString("""
        profile = "slick.jdbc.H2Profile$"
        db { driver = "org.h2.Driver", user = "sa", password = "", numThreads = 4, maxConnections = 4, minConnections = 1 }
        """).withValue("db.url", ConfigValueFactory.fromAnyRef(h2));
    // One database for the key records (durable state). The journal's settings point at it too
    // because the schema tool reads them; Corral writes no events.
    Config db = ConfigFactory.empty()
        .withValue("jdbc-durable-state-store.slick", slick.root())
        .withValue("pekko-persistence-jdbc.shared-databases.slick", slick.root())
        .withValue("jdbc-journal.use-shared-db", ConfigValueFactory.fromAnyRef("slick"))
        .withValue("jdbc-snapshot-store.use-shared-db", ConfigValueFactory.fromAnyRef("slick"))
        .withValue("jdbc-read-journal.use-shared-db", ConfigValueFactory.fromAnyRef("slick"));
    // The drain task runs in service-requests-done, whose default timeout (5 s) would cut it short.
    Config drain = ConfigFactory.parseString("pekko.coordinated-shutdown.phases.service-requests-done.timeout = "
        + (settings.drainTimeout().toMillis() + 5_000) + "ms");
    return settings.raw()
        .withFallback(drain)
        .withFallback(db)
        .withFallback(ConfigFactory.parseResources("corral-node.conf"))
        .withFallback(ConfigFactory.load())
        .resolve();
  }

  /** The adapter of a repository's type. */
  static Repository repository(RepoSettings r) {
    return switch (r.type()) {
      case "generic" -> new GenericRepository(r.name(), r.url());
      case "npm" -> new dev.corral.http.repo.NpmRepository(r.name(), r.url());
      case "pypi" -> new dev.corral.http.repo.PypiRepository(r.name(), r.url());
      // one line per registry type
      default -> throw new SettingsException("corral.repos." + r.name() + ".type", r.type() + " is not served yet");
    };
  }

  static UpstreamSettings upstreamSettings(RepoSettings r) {
    return new UpstreamSettings(r.connectTimeout(), r.firstByteTimeout(), r.idleTimeout(), r.retries(),
        r.retryBackoff(), r.maxRedirects(), r.maxConnections(),
        UpstreamSettings.openRequestsFor(r.maxConnections()), r.credential());
  }

  static FetchPolicy policy(RepoSettings r) {
    return new FetchPolicy(r.inlineLimitBytes(), r.negativeTtl(), r.waiterBudget(),
        r.onBudgetExhausted() == RepoSettings.OnBudgetExhausted.BYPASS, r.maxWaiters(), r.maxOrphanFetches());
  }
}
