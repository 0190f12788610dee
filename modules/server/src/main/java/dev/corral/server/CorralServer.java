package dev.corral.server;

import dev.corral.cluster.ClusterJoin;
import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.corral.core.wait.CancelRegistry;
import dev.corral.http.metrics.ClusterGauges;
import dev.corral.http.metrics.Metrics;
import dev.corral.http.metrics.StoreGauges;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.FetchPolicy;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.MissedPurges;
import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Timers;
import dev.corral.core.wait.Waiters;
import dev.corral.core.store.DiskStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.http.FrontDoor;
import dev.corral.http.PublicBase;
import dev.corral.cluster.ClusterPeers;
import dev.corral.cluster.HttpPeerBlobs;
import dev.corral.cluster.PeerPort;
import dev.corral.cluster.PeerTransfers;
import dev.corral.registry.generic.GenericRepository;
import dev.corral.registry.go.GoRepository;
import dev.corral.registry.group.GroupRepository;
import dev.corral.registry.maven.MavenRepository;
import dev.corral.registry.npm.NpmRepository;
import dev.corral.registry.oci.OciRepository;
import dev.corral.registry.pypi.PypiRepository;
import dev.corral.registry.Repository;
import dev.corral.http.upstream.HttpUpstream;
import dev.corral.http.upstream.RepoUpstream;
import dev.corral.http.upstream.UpstreamScope;
import dev.corral.http.upstream.UpstreamSettings;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import java.util.function.IntSupplier;
import org.apache.pekko.Done;
import org.apache.pekko.actor.CoordinatedShutdown;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.http.javadsl.Http;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Corral node: the actor system (a one-node cluster by default), the store, the
 * upstream client, the fetch entities and the front door, wired from {@link CorralSettings}.
 */
public final class CorralServer implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(CorralServer.class);

  /**
   * Tests only: a data directory's {@link Executor} for its store's index load, run once the node
   * has started, in place of the thread a node starts; a test holds the load back to see a node serve
   * while its index loads. Keyed by data directory (absolute, normalized), so that nodes of other
   * tests are not affected; taken by the start.
   */
  static final Map<Path, Executor> INDEX_LOADS_HELD = new java.util.concurrent.ConcurrentHashMap<>();
  /**
   * How long an idle fetch entity lives before it passivates (see {@link FetchEntity.IdleTimeout}):
   * with other nodes, long enough for its last answers to cross the network before a waiter's
   * budget asks whether its outcome began (W3); on a node alone, where answers arrive within
   * milliseconds, a second. Short, because every missed key leaves an entity (a few KB of heap)
   * for this long, and a steady miss load keeps that many alive for the collector to copy
   * (docs/benchmarks.md, "Idle entities").
   */
  static final FetchEntity.IdleTimeout ENTITY_IDLE =
      new FetchEntity.IdleTimeout(Duration.ofSeconds(1), Duration.ofSeconds(30));

  private final ActorSystem<Void> system;
  private final FrontDoor frontDoor;
  private final ServerBinding binding;
  private final Node node;
  private final Metrics metrics;
  private final CancelRegistry cancels;
  private final Waiters waiters;
  private final String nodeName;
  private final PeerPort peerPort;
  private final PeerTransferMetrics transfers;
  private final CompletionStage<Optional<Integer>> warmUp;
  /** See {@link #waitedForPeerUploads}. */
  private volatile boolean waitingForPeerUploads;
  /** When the drain timeout of this node's stop runs out ({@link System#nanoTime}); 0 before the stop. */
  private volatile long drainDeadline;

  private CorralServer(ActorSystem<Void> system, FrontDoor frontDoor, ServerBinding binding, Node node,
      Metrics metrics, CancelRegistry cancels, Waiters waiters, String nodeName, PeerPort peerPort,
      PeerTransferMetrics transfers, CompletionStage<Optional<Integer>> warmUp) {
    this.warmUp = warmUp;
    this.peerPort = peerPort;
    this.transfers = transfers;
    this.metrics = metrics;
    this.waiters = waiters;
    this.nodeName = nodeName;
    this.system = system;
    this.frontDoor = frontDoor;
    this.binding = binding;
    this.node = node;
    this.cancels = cancels;
  }

  /** Starts a node and returns once it listens and is ready. */
  public static CorralServer start(CorralSettings settings) throws Exception {
    return start(settings, Ticker.systemTicker());
  }

  /** A cluster port that cannot be bound is an error of the setting that named it. */
  private static SettingsException asSetting(ClusterJoin.CannotListen e) {
    Setting setting = switch (e.port()) {
      case CLUSTER -> Setting.CLUSTER_PORT;
      case MANAGEMENT -> Setting.MANAGEMENT_PORT;
      case PEER -> Setting.PEER_PORT;
    };
    return new SettingsException(setting.flag(), e.getMessage());
  }

  /**
   * The client port (plain or HTTPS) that cannot be bound, as an error of the setting that named
   * it: {@code --http-host} when the address is not this machine's (or has none), else
   * {@code --http-port} (in use, or one the process may not bind). Other failures are returned as
   * they are.
   */
  static Exception cannotListen(String host, int port, Exception e) {
    Throwable root = e;
    boolean bind = false;
    for (Throwable t = e; t != null; t = t.getCause()) {
      bind |= t instanceof java.net.BindException || t instanceof java.nio.channels.UnresolvedAddressException
          || t instanceof java.net.UnknownHostException;
      root = t;
    }
    if (!bind) {
      return e;
    }
    String why = root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    String address = (host.contains(":") && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
    return new SettingsException((isLocalAddress(host) ? Setting.HTTP_PORT : Setting.HTTP_HOST).flag(),
        "cannot listen on " + address + " (" + why + ")");
  }

  /** Whether {@code host} is an address of this machine (any, loopback, or an interface's). */
  static boolean isLocalAddress(String host) {
    try {
      java.net.InetAddress a = java.net.InetAddress.getByName(host);
      return a.isAnyLocalAddress() || a.isLoopbackAddress() || java.net.NetworkInterface.getByInetAddress(a) != null;
    } catch (java.io.IOException e) {
      return false;
    }
  }

  /**
   * As {@link #start(CorralSettings)}, with {@code ticker} as the node's source of interval time
   * (how long a not-found is remembered, the pause after a failed revalidation, cancel tombstones):
   * a test passes a ticker it moves by hand. Wall-clock ages of stored copies still use the clock.
   */
  public static CorralServer start(CorralSettings settings, Ticker ticker) throws Exception {
    return start(settings, ticker, Timers.system());
  }

  /**
   * As {@link #start(CorralSettings, Ticker)}, with {@code scheduler} running the waiters' timers
   * (each waiter's budget, the re-ask of an unanswered ask, the pauses before asking a stopped
   * entity again) in the ticker's time: a test passes a scheduler that runs due tasks when its
   * ticker moves. Pekko's own timers (the idle entities' passivation, upstream timeouts and
   * retry backoff, the cluster's) stay on the actor system's scheduler.
   */
  public static CorralServer start(CorralSettings settings, Ticker ticker, Scheduler scheduler) throws Exception {
    return start(settings, ticker, scheduler, Clock.systemUTC());
  }

  /**
   * As {@link #start(CorralSettings, Ticker, Scheduler)}, with {@code clock} as the node's wall
   * clock: the ages of stored copies and their last use ({@code max-age-unused}). A test passes a
   * clock it moves by hand.
   */
  public static CorralServer start(CorralSettings settings, Ticker ticker, Scheduler scheduler, Clock clock)
      throws Exception {
    Path dataDir = settings.dataDir().toAbsolutePath().normalize();
    Config pekko = pekkoConfig(settings, dataDir);
    ConfigDiscovery.check(pekko, settings.cluster());
    JournalDatabase database = new JournalDatabase(settings.journal(), dataDir);
    database.checkConnection();
    createDataDir(dataDir);
    CompletableFuture<Void> started = new CompletableFuture<>();
    Executor held = INDEX_LOADS_HELD.remove(dataDir);
    Executor indexLoader = held != null ? held : load -> {
      Thread loader = new Thread(load, "corral-store-index");
      loader.setDaemon(true);
      loader.start();
    };
    CompletableFuture<DiskStore> storeOpening =
        openStore(dataDir.resolve("store"), settings.maxSizeBytes(), clock, load -> started.thenRun(() -> indexLoader.execute(load)));
    NodeName.set(settings.cluster().nodeName()
        .orElse(settings.cluster().host() + ":" + settings.cluster().port()));
    ActorSystem<Void> system;
    try {
      system = ClusterJoin.createSystem(pekko, settings.cluster());
      warmUp(system);
    } catch (ClusterJoin.CannotListen e) {
      throw asSetting(e);
    }
    try {
      database.createTables(system);
      CompletableFuture<Done> memberUp;
      try {
        memberUp = ClusterJoin.start(system, settings.cluster());
      } catch (ClusterJoin.CannotListen e) {
        throw asSetting(e);
      }
      String nodeName = settings.cluster().nodeName().orElse(ClusterJoin.selfHostPort(system));
      NodeName.set(nodeName);

      Metrics metrics = new Metrics();
      Executor io = system.dispatchers().lookup(DispatcherSelector.blocking());
      DiskStore store = opened(storeOpening);
      StoreGauges.register(metrics.registry(), store, dataDir.resolve("store"));
      ClusterGauges.register(metrics, system);
      // The index snapshot (read by the next start instead of every key record) is written in the
      // last phase before the actor system ends: by then the front door has stopped taking requests
      // and drained its fetches and responses (service-unbind, service-requests-done) and this
      // node's shards, whose entities commit, have been handed off. A change that comes even so (a
      // late replica, a purge, a bad blob found by a peer's read) is made under the store's lock
      // after the snapshot, and deletes it first: the next start then rebuilds, never trusting an
      // index that misses a change.
      CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseBeforeActorSystemTerminate(),
          "corral-store-snapshot", () -> CompletableFuture.supplyAsync(() -> {
            store.close();
            return Done.getInstance();
          }, io));
      // Purges this node missed while it was down: its copies go before anything is served.
      MissedPurges.of(system, store).drop(system).toCompletableFuture().get(60, TimeUnit.SECONDS);
      Map<String, RepoUpstream> upstreams = new HashMap<>();
      Map<String, FetchPolicy> policies = new HashMap<>();
      Map<String, Repository> repos = new LinkedHashMap<>();
      for (RepoSettings r : settings.repos()) {
        if (r.isGroup()) {
          continue; // no upstream, no keys of its own: built over its members below
        }
        upstreams.put(r.name(), new RepoUpstream(r.url(), upstreamSettings(r), upstreamScope(r), r.tls()));
        policies.put(r.name(), policy(r));
        repos.put(r.name(), repository(r));
      }
      for (RepoSettings r : settings.repos()) {
        if (r.isGroup()) {
          repos.put(r.name(), group(r, repos));
        }
      }
      HttpUpstream upstream = new HttpUpstream(system, metrics, upstreams, settings.upstreamProxy(), ticker);
      // Half of Artery's large frame: no reply carrying a body can ever exceed it.
      long frame = system.settings().config().getBytes("pekko.remote.artery.advanced.maximum-large-frame-size");
      PeerTransferMetrics transfers = new PeerTransferMetrics(metrics);
      ClusterPeers peers = new ClusterPeers(system, new HttpPeerBlobs(system, settings.cluster().tls(), transfers),
          frame / 2);
      FetchPolicy unknownRepo = FetchPolicy.defaults(); // asked on every hit: made once
      Node node = new Node(store, new HotBlobs(settings.memoryCacheBytes()), KeyRecords.of(system), upstream, metrics,
          name -> policies.getOrDefault(name, unknownRepo), ticker, scheduler, clock, io, peers);
      node.fanOut(settings.cluster().fanOut());
      UnusedCleanup cleanup = UnusedCleanup.of(store, settings.repos(), metrics.registry());
      if (cleanup != null) {
        cleanup.start(scheduler, io);
        CoordinatedShutdown.get(system).addTask(CoordinatedShutdown.PhaseServiceUnbind(), "corral-cleanup-stop",
            () -> {
              cleanup.stop();
              return CompletableFuture.completedFuture(Done.getInstance());
            });
      }
      FetchEntity.init(system, node, ENTITY_IDLE);
      CancelRegistry cancels = new CancelRegistry(ticker, settings.tombstoneTtl(), 100_000);
      Waiters waiters = new Waiters(ClusterSharding.get(system), cancels, node, system);
      FrontDoor frontDoor = new FrontDoor(system, node, metrics, waiters, repos, settings.adminToken(),
          settings.tls().isPresent()
              ? new PublicBase(settings.publicBaseUrl(), settings.trustedProxies()).overTls()
              : new PublicBase(settings.publicBaseUrl(), settings.trustedProxies()),
          settings.serveLimits(), settings.clientAuth());
      ServerBinding binding;
      try {
        binding = (settings.tls().isPresent()
            ? frontDoor.bindTls(settings.httpHost(), settings.httpPort(), settings.connections(),
                settings.tls().get().sslContext(), settings.tlsHttp2())
            : frontDoor.bind(settings.httpHost(), settings.httpPort(), settings.connections()))
            .toCompletableFuture().get(30, TimeUnit.SECONDS);
      } catch (java.util.concurrent.ExecutionException | RuntimeException e) {
        throw cannotListen(settings.httpHost(), settings.httpPort(), e);
      }
      CompletionStage<Optional<Integer>> warmUp = settings.tls().isPresent()
          ? CompletableFuture.completedFuture(Optional.empty())
          : frontDoor.warmUp(binding.localAddress()).handle((status, e) -> {
            if (e != null) {
              log.debug("the front door's warm-up request: {}", e.toString());
            }
            return Optional.ofNullable(status);
          });
      PeerPort peerPort;
      try {
        peerPort = connectPeers(system, settings, peers, store, node, transfers);
      } catch (ClusterJoin.CannotListen e) {
        throw asSetting(e);
      }
      CorralServer server = new CorralServer(system, frontDoor, binding, node, metrics, cancels, waiters, nodeName,
          peerPort, transfers, warmUp);
      server.drainOnShutdown(settings.drainTimeout());
      NodeName.register(metrics, nodeName);
      // Ready once this node is an Up member: a one-node cluster is Up at once (waited for
      // here); a node joining others becomes ready when they have let it in.
      if (settings.cluster().selfJoin()) {
        memberUp.get(30, TimeUnit.SECONDS);
      }
      memberUp.thenRun(() -> {
        if (CoordinatedShutdown.get(system).getShutdownReason().isEmpty()) {
          frontDoor.ready(true);
        }
      });
      // A node of one is ready by now; a node joining others loads while it waits to be let in
      // (waiting is not work), so that a purge by prefix, which waits for the index, never waits
      // for the join.
      started.complete(null);
      InetSocketAddress a = binding.localAddress();
      log.info("listening on {}://{}:{}{}", settings.tls().isPresent() ? "https" : "http", a.getHostString(), a.getPort(),
          settings.tls().isEmpty() ? "" : settings.tlsHttp2() ? " (HTTP/2 and HTTP/1.1)" : " (HTTP/1.1)");
      return server;
    } catch (Exception | Error e) {
      system.terminate();
      throw e;
    }
  }

  /**
   * Creates the data directory (and its parents) if it is missing. A path that is a file, cannot be
   * created or is not writable is an error of {@code --data-dir}, found before anything is bound or
   * written; what is at the path is left as it was.
   */
  static void createDataDir(Path dir) {
    String flag = Setting.DATA_DIR.flag();
    if (Files.exists(dir) && !Files.isDirectory(dir)) {
      throw new SettingsException(flag, dir + " is not a directory");
    }
    try {
      Files.createDirectories(dir);
    } catch (java.nio.file.FileAlreadyExistsException e) { // e.g. a link to nowhere
      throw new SettingsException(flag, dir + " is not a directory");
    } catch (java.nio.file.AccessDeniedException e) {
      throw new SettingsException(flag, "cannot create " + dir + ": permission denied");
    } catch (java.io.IOException e) {
      Path file = dir.getParent();
      while (file != null && !Files.exists(file)) {
        file = file.getParent();
      }
      throw new SettingsException(flag, "cannot create " + dir + ": " + (file != null && !Files.isDirectory(file)
          ? file + " is not a directory"
          : e instanceof java.nio.file.FileSystemException f && f.getReason() != null ? f.getReason() : e.toString()));
    }
    if (!Files.isWritable(dir)) {
      throw new SettingsException(flag, dir + " is not writable");
    }
  }

  /**
   * The record serializers' first use, on a thread of its own while the start goes on, rather
   * than on the node's first fetch (S0 in bench/: the first miss waited about 50 ms for it).
   */
  private static void warmUp(ActorSystem<?> system) {
    Thread warm = new Thread(() -> {
      try {
        KeyRecords.warmUp(system);
      } catch (RuntimeException e) {
        log.debug("record serializer warm-up: {}", e.toString());
      }
    }, "corral-warm-up");
    warm.setDaemon(true);
    warm.start();
  }

  /**
   * The threads that make the store's commits durable after they return (DiskStore's class
   * comment): the fsyncs of a few concurrent commits at a time, whose waits the file system's
   * journal shares.
   */
  static final int STORE_SYNC_THREADS = 4;

  /**
   * Opens the store on a thread of its own, overlapping the start of the actor system, and loads
   * its index on {@code indexLoader}: another thread, once the node has started (a node of one:
   * once it is ready). The node does not wait for it,
   * and until it is loaded a key is looked up in its own record on disk (DiskStore's class
   * comment). Not sooner: a million keys take 5-10 s of CPU and half a GiB of heap to load, and on
   * two cores the collector's pauses while they load held the start back by as long (docs/
   * benchmarks.md, "Start-up with the index loaded in the background"). A failed start after this
   * has consumed the snapshot: the next start rebuilds.
   */
  private static CompletableFuture<DiskStore> openStore(Path dir, long maxSizeBytes, Clock clock,
      Executor indexLoader) {
    CompletableFuture<DiskStore> opening = new CompletableFuture<>();
    Thread opener = new Thread(() -> {
      try {
        DiskStore store = DiskStore.open(dir, maxSizeBytes, clock, indexLoader,
            DiskStore.syncThreads(STORE_SYNC_THREADS));
        opening.complete(store);
        store.warmUp(); // after the store is handed over: the start does not wait for it
      } catch (Throwable e) {
        opening.completeExceptionally(e);
      }
    }, "corral-store-open");
    opener.setDaemon(true);
    opener.start();
    return opening;
  }

  /** The store once open; its open's own exception if it failed. */
  private static DiskStore opened(CompletableFuture<DiskStore> opening) throws Exception {
    try {
      return opening.get();
    } catch (java.util.concurrent.ExecutionException e) {
      if (e.getCause() instanceof Exception cause) {
        throw cause;
      }
      throw e;
    }
  }

  /**
   * Lets this node exchange bytes with the other nodes: binds the peer port at the cluster host
   * ({@link PeerPort}; never the client port) and sets this node's peer URL, listed in key records
   * as a holder. Evictions tell the key's entity that this node no longer holds the bytes.
   */
  private static PeerPort connectPeers(ActorSystem<?> system, CorralSettings settings, ClusterPeers peers,
      DiskStore store, Node node, PeerTransfers transfers) throws Exception {
    PeerPort peerPort = PeerPort.bind(system, node, settings.cluster(), transfers);
    String selfUrl = PeerPort.url(settings.cluster(), peerPort.localAddress());
    peers.bound(selfUrl);
    ClusterSharding sharding = ClusterSharding.get(system);
    store.onEvicted(keyId -> sharding.entityRefFor(FetchEntity.TYPE_KEY, keyId).tell(new FetchEntity.Dropped(selfUrl)));
    log.info("peer endpoint for other nodes: {}/-/peer/ ({})", selfUrl, settings.cluster().tls().isPresent()
        ? "client certificates from the cluster's CA required" : "no TLS: firewall it to the cluster's nodes");
    return peerPort;
  }

  /**
   * SEMANTICS L4: on SIGTERM (or {@link #close()}) stop taking requests, let in-flight fetches
   * and responses finish up to the drain timeout, then let sharding hand its shards off.
   *
   * <p>{@code binding.terminate} alone is not enough: it waits only for responses not yet begun
   * and resets a connection with none pending, losing the bytes of a response still on their way
   * to a slow client, and it knows nothing of fetches whose waiters have left (C3). So the drain
   * first waits, bounded by the drain timeout, until no fetch runs on this node and no connection
   * is answering a request (from the request's arrival until its response has been handed to
   * Pekko, a streamed body to its end); then it ends every connection the graceful way (the
   * bytes still on their way are written, then the connection is closed:
   * {@link FrontDoor#closeConnections}: HTTP/1.1 and HTTP/2, plain and TLS), and only then
   * terminates the binding with what is left of the timeout, for whatever did not end in time. The
   * phase's own timeout is raised to match in {@link #pekkoConfig}.
   */
  private void drainOnShutdown(Duration drainTimeout) {
    CoordinatedShutdown cs = CoordinatedShutdown.get(system);
    cs.addTask(CoordinatedShutdown.PhaseServiceUnbind(), "corral-unbind", () -> {
      node.drain(); // entities here start no fetch for other nodes' waiters from now on
      frontDoor.drain();
      return binding.unbind().thenApply(d -> Done.getInstance());
    });
    // The peer port stays open while the node drains and hands its shards off: other nodes may
    // still be copying from it (with fan-out, from any node). Copies still being sent then are let
    // finish, within what is left of the drain timeout (one budget for the whole stop), and their
    // connections are ended as the client ports' are: the last bytes on their way written, then
    // closed (PeerDrainAnsweredBodyTest). Terminating at once would cut them, and a copy that
    // cannot resume elsewhere fails its node's clients.
    cs.addTask(CoordinatedShutdown.PhaseBeforeActorSystemTerminate(), "corral-peer-unbind", () -> {
      CompletableFuture<Done> sent = new CompletableFuture<>();
      long deadline = drainDeadline != 0 ? drainDeadline : System.nanoTime() + drainTimeout.toNanos();
      awaitUploadsSent(sent, deadline);
      return sent.thenCompose(d -> {
            peerPort.closeConnections();
            CompletableFuture<Done> closed = new CompletableFuture<>();
            awaitNone(closed, deadline, peerPort::openConnections, () -> { }, left -> log.warn(
                "drain timeout reached with {} peer connections still sending their last copy; closing the peer port", left));
            return closed;
          })
          .thenCompose(d -> peerPort.terminate());
    });
    // After a drain, the client pools (upstreams, peers) are closed here rather than by the actor
    // system's end, which would log each live pool as "shut down unexpectedly". Waited for at most
    // a second: a pool closes only when its requests end, and a request the drain gave up on
    // (an upstream that never answers) would hold the stop, and this node's place in the
    // cluster, until its connection's idle timeout (ClusterFailureTest).
    cs.addTask(CoordinatedShutdown.PhaseBeforeActorSystemTerminate(), "corral-client-pools",
        () -> Http.get(system).shutdownAllConnectionPools().toCompletableFuture()
            .completeOnTimeout(null, 1, TimeUnit.SECONDS).thenApply(d -> Done.getInstance()));
    cs.addTask(CoordinatedShutdown.PhaseServiceRequestsDone(), "corral-drain", () -> {
      long deadline = System.nanoTime() + drainTimeout.toNanos();
      drainDeadline = deadline;
      CompletableFuture<Done> idle = new CompletableFuture<>();
      awaitIdle(idle, deadline);
      return idle.thenCompose(d -> {
            frontDoor.closeConnections();
            CompletableFuture<Done> closed = new CompletableFuture<>();
            awaitConnectionsClosed(closed, deadline);
            return closed;
          })
          .thenCompose(d -> binding.terminate(
              Duration.ofNanos(Math.max(deadline - System.nanoTime(), TimeUnit.MILLISECONDS.toNanos(100)))))
          .thenApply(t -> Done.getInstance());
    });
  }

  /** Completes {@code idle} once no fetch runs and no connection answers, or at the deadline. */
  private void awaitIdle(CompletableFuture<Done> idle, long deadline) {
    awaitNone(idle, deadline, () -> Math.max(0, node.fetchesInFlight()) + Math.max(0, frontDoor.answeringConnections()),
        () -> { }, left -> log.warn("drain timeout reached with {} fetches running and {} connections still answering;"
            + " stopping anyway", node.fetchesInFlight(), frontDoor.answeringConnections()));
  }

  /** Completes {@code closed} once every connection the front door closed has ended, or at the deadline. */
  private void awaitConnectionsClosed(CompletableFuture<Done> closed, long deadline) {
    awaitNone(closed, deadline, frontDoor::openConnections, () -> { }, left -> log.warn(
        "drain timeout reached with {} connections still sending their last response; stopping anyway", left));
  }

  /** Completes {@code sent} once no copy is being sent to another node, or at the deadline. */
  private void awaitUploadsSent(CompletableFuture<Done> sent, long deadline) {
    awaitNone(sent, deadline, transfers::uploadsNow, () -> waitingForPeerUploads = true, left -> log.warn(
        "drain timeout reached with {} copies to other nodes still being sent; closing the peer port", left));
  }

  /**
   * Completes {@code done} once {@code left} is 0 or less, checked every 50 ms, or at the deadline,
   * telling {@code late} what was left then; {@code waiting} runs at each check that finds some.
   */
  private static void awaitNone(CompletableFuture<Done> done, long deadline, IntSupplier left, Runnable waiting,
      IntConsumer late) {
    int now = left.getAsInt();
    if (now <= 0) {
      done.complete(Done.getInstance());
    } else if (System.nanoTime() - deadline >= 0) {
      late.accept(now);
      done.complete(Done.getInstance());
    } else {
      waiting.run();
      CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS)
          .execute(() -> awaitNone(done, deadline, left, waiting, late));
    }
  }

  /**
   * Whether this node's stop has waited for a copy to another node to be sent before closing its
   * peer port (for tests).
   */
  public boolean waitedForPeerUploads() {
    return waitingForPeerUploads;
  }

  public InetSocketAddress address() {
    return binding.localAddress();
  }

  /**
   * The status of the node's one request to its own front door as it started ({@link
   * FrontDoor#warmUp}); empty when it was not sent (HTTPS) or got no answer. For tests.
   */
  public CompletionStage<Optional<Integer>> warmUp() {
    return warmUp;
  }

  /**
   * The most copies this node's peer endpoint ever sent to other nodes at once (the high-water mark
   * of {@code corral_peer_uploads_in_progress}); for tests of fan-out's upload cap.
   */
  public int mostPeerUploadsAtOnce() {
    return transfers.mostUploadsAtOnce();
  }

  /** Where the peer port listens (the cluster host). */
  public InetSocketAddress peerAddress() {
    return peerPort.localAddress();
  }

  /** Connections the peer port has accepted and TCP has not closed yet. */
  int peerConnections() {
    return peerPort.openConnections();
  }

  /** The node's stable name ({@code --node-name}, else its cluster host:port). */
  public String nodeName() {
    return nodeName;
  }

  /**
   * {@code corral db init}: creates the missing tables in the configured database and checks
   * them, without joining a cluster (a local actor system just for the schema tool).
   *
   * @return the database's URL
   * @throws SettingsException naming the setting when the database cannot be reached or used
   */
  public static String initDatabase(CorralSettings settings) throws Exception {
    Path dataDir = settings.dataDir().toAbsolutePath().normalize();
    JournalDatabase database = new JournalDatabase(settings.journal(), dataDir);
    database.checkConnection();
    if (settings.journal().isEmpty()) {
      createDataDir(dataDir);
    }
    Config local = ConfigFactory.parseString("pekko.actor.provider = local\npekko.loglevel = WARNING")
        .withFallback(pekkoConfig(settings, dataDir));
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "corral-db-init", local);
    try {
      database.createTables(system);
      return database.url();
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(30, TimeUnit.SECONDS);
    }
  }

  /**
   * For the process: exit when the node stops without being asked to by a signal, such as when
   * the split brain resolver downs it (its actor system ends, and a JVM left running would
   * serve nothing). Exit code 1, so a supervisor restarts it and it joins afresh.
   */
  void exitWhenStopped() {
    // A thread of its own, not a callback: callbacks run on daemon threads, and once the actor
    // system's threads are gone the JVM would end (with code 0) before a daemon thread acts.
    Thread watcher = new Thread(() -> {
      try {
        system.getWhenTerminated().toCompletableFuture().join();
      } catch (RuntimeException e) {
        // terminated all the same
      }
      Optional<CoordinatedShutdown.Reason> reason = CoordinatedShutdown.get(system).getShutdownReason();
      if (reason.isEmpty() || reason.get() != CoordinatedShutdown.jvmExitReason()) {
        log.warn("the node stopped ({}); exiting", reason.map(Object::toString).orElse("no reason given"));
        System.exit(1);
      }
    }, "corral-exit-when-stopped");
    watcher.setDaemon(false);
    watcher.start();
  }

  public ActorSystem<Void> system() {
    return system;
  }

  public Node node() {
    return node;
  }

  /** The node's Prometheus metrics (what {@code /-/metrics} shows). */
  public Metrics metrics() {
    return metrics;
  }

  /** The node's front door (tests drive {@link FrontDoor#serve} with keys of their own). */
  FrontDoor frontDoor() {
    return frontDoor;
  }

  /** The node's waiting side (joins sent to entities, for tests). */
  public Waiters waiters() {
    return waiters;
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
    Config db = new JournalDatabase(settings.journal(), dataDir).pekkoConfig();
    // The drain task runs in service-requests-done, whose default timeout (5 s) would cut it short.
    Config drain = ConfigFactory.parseString("pekko.coordinated-shutdown.phases.service-requests-done.timeout = "
        + (settings.drainTimeout().toMillis() + 5_000) + "ms");
    // Pekko's own idle timeout ends idle connections; max-connections only for truth's sake (the
    // front door applies the cap itself).
    Config connections = ConfigFactory.parseString("pekko.http.server.idle-timeout = "
        + settings.connections().idleTimeout().toMillis() + "ms\npekko.http.server.max-connections = "
        + settings.connections().maxConnections());
    // Made from Corral's settings: the file's pekko section may not contradict them.
    Config owned = drain.withFallback(connections).withFallback(ClusterJoin.pekkoConfig(settings.cluster()));
    Config effective = settings.raw()
        .withFallback(owned)
        // A default the file may raise, not a Corral setting: the index snapshot of a million keys
        // takes a second or two, a slow disk more than 5 s (cut short, the next start would rebuild).
        .withFallback(ConfigFactory.parseString(
            "pekko.coordinated-shutdown.phases.before-actor-system-terminate.timeout = 60s"))
        .withFallback(db)
        .withFallback(ConfigFactory.parseResources("corral-cluster.conf"))
        .withFallback(ConfigFactory.parseResources("corral-node.conf"))
        .withFallback(ConfigFactory.load())
        .resolve();
    OwnedPekkoSettings.check(settings.raw(), owned, effective, settings.cluster());
    return effective;
  }

  /** The adapter of a repository's type. */
  static Repository repository(RepoSettings r) {
    return switch (r.type()) {
      case "generic" -> new GenericRepository(r.name(), r.url(), r.query(), r.freshness());
      case "maven" -> new MavenRepository(r.name(), r.url());
      case "go" -> new GoRepository(r.name(), r.url(), r.sumdbUrl());
      case "npm" -> new NpmRepository(r.name(), r.url());
      case "pypi" -> new PypiRepository(r.name(), r.url());
      case "oci" -> new OciRepository(r.name(), r.url(), r.singleNameNamespace(), r.rootMirror());
      // one line per registry type
      default -> throw new SettingsException("corral.repos." + r.name() + ".type", r.type() + " is not served yet");
    };
  }

  /** A group over its members (configured repositories of one type, checked by the settings). */
  static Repository group(RepoSettings r, Map<String, Repository> repos) {
    List<Repository> members = r.members().stream().map(repos::get).toList();
    return new GroupRepository(r.name(), members, GroupRepository.mergeOf(members.get(0).type()));
  }

  static UpstreamSettings upstreamSettings(RepoSettings r) {
    return new UpstreamSettings(r.connectTimeout(), r.firstByteTimeout(), r.idleTimeout(), r.retries(),
        r.retryBackoff(), r.maxRedirects(), r.maxConnections(),
        UpstreamSettings.openRequestsFor(r.maxConnections()), r.credential())
        // A registry's Bearer challenge is answered with a token from its realm (oci only).
        .withRegistryTokens(r.type().equals("oci"));
  }

  /**
   * Where the repository's upstream requests may go: the configured URL's origin under its path
   * (for PyPI the index's parent, where an index's files usually live: {@code .../simple/} ->
   * {@code .../}), the checksum database of a go repository, and its {@code allowed-hosts}.
   */
  static UpstreamScope upstreamScope(RepoSettings r) {
    UpstreamScope scope = UpstreamScope.of(r.url());
    if (r.type().equals("pypi")) {
      String path = java.net.URI.create(r.url()).getRawPath();
      String dir = path == null || path.isEmpty() ? "/" : path.endsWith("/") ? path : path + "/";
      String parent = dir.substring(0, dir.lastIndexOf('/', dir.length() - 2) + 1);
      scope = scope.under(parent.isEmpty() ? "/" : parent);
    }
    if (r.sumdbUrl().isPresent()) {
      scope = scope.alsoUnder(r.sumdbUrl().get());
    }
    return scope.allowing(r.allowedHosts());
  }

  static FetchPolicy policy(RepoSettings r) {
    return new FetchPolicy(r.inlineLimitBytes(), r.negativeTtl(), r.waiterBudget(),
        r.onBudgetExhausted() == RepoSettings.OnBudgetExhausted.BYPASS, r.maxWaiters(), r.maxOrphanFetches(),
        r.metadataTtl(), r.maxStale());
  }
}
