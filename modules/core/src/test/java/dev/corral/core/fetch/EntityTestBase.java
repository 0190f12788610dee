package dev.corral.core.fetch;

import dev.corral.core.wait.Waiters;
import dev.corral.core.record.KeyRecords;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import com.github.benmanes.caffeine.cache.Ticker;
import com.typesafe.config.ConfigFactory;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.wait.CancelRegistry;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.DiskStore;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.DispatcherSelector;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.persistence.testkit.PersistenceTestKitDurableStateStorePlugin;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/**
 * One single-node cluster per test class: sharding, the in-memory durable state plugin, a disk
 * store in a temporary directory, a {@link ScriptedUpstream} and a ticker the test can move, which
 * is also the time of the node's timers ({@link ManualScheduler}): no budget runs out, no re-ask
 * or retry pause ends, unless the test advances the ticker.
 * Tests share the cluster, so each uses keys (and, when it needs its own policy or metrics, a
 * repository) of its own.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class EntityTestBase {
  static final Duration WAIT = Duration.ofSeconds(10);

  ActorTestKit kit;
  ClusterSharding sharding;
  Node node;
  final CountingEvents events = new CountingEvents();
  Waiters waiters;
  FaultyStore store;
  Path dataDir;
  final ScriptedUpstream upstream = new ScriptedUpstream();
  final MovableTicker ticker = new MovableTicker();
  /** The node's timers, in the ticker's time. */
  final ManualScheduler scheduler = new ManualScheduler(ticker);
  private final Map<String, FetchPolicy> policies = new ConcurrentHashMap<>();
  private final AtomicInteger seq = new AtomicInteger();

  /**
   * How long an idle entity of the cluster lives before it passivates (Pekko's real time): long
   * enough that none passivates while a test runs. Idle passivation itself is tested on Pekko's
   * ManualTime ({@code LifecycleTest}).
   */
  FetchEntity.IdleTimeout idleTimeout() {
    return FetchEntity.IdleTimeout.of(Duration.ofHours(1));
  }

  /** The node's view of the other nodes (a test may give a stand-in). */
  Peers peers() {
    return Peers.NONE;
  }

  /** Registers the entities of the cluster's sharding: the fetch entity (a test may register a stand-in). */
  void initEntities() {
    FetchEntity.init(kit.system(), node, idleTimeout());
  }

  @BeforeAll
  void startCluster() throws IOException {
    kit = ActorTestKit.create(getClass().getSimpleName(), ConfigFactory.parseString("""
        pekko.actor.provider = cluster
        pekko.remote.artery.canonical.port = 0
        pekko.remote.artery.canonical.hostname = 127.0.0.1
        pekko.cluster.sharding.passivation.strategy = none
        pekko.cluster.jmx.multi-mbeans-in-same-jvm = on
        pekko.actor.serialization-bindings { "dev.corral.core.CborSerializable" = jackson-cbor }
        # The cluster's leave at the end of the class took more than the default 10 s once on a
        # loaded machine (WaitingTest, 2026-12-07): what the class tests had passed.
        pekko.actor.testkit.typed.system-shutdown-default = 30s
        """).withFallback(PersistenceTestKitDurableStateStorePlugin.getInstance().config())
        .withFallback(ConfigFactory.load()));
    Cluster cluster = Cluster.get(kit.system());
    cluster.manager().tell(Join.create(cluster.selfMember().address()));
    dataDir = Files.createTempDirectory("corral-" + getClass().getSimpleName());
    store = new FaultyStore(DiskStore.open(dataDir, 1L << 30, ticker.clock()));
    node = new Node(store, new HotBlobs(0), KeyRecords.of(kit.system()), upstream, events,
        this::policy, ticker, scheduler, ticker.clock(),
        kit.system().dispatchers().lookup(DispatcherSelector.blocking()), peers());
    initEntities();
    sharding = ClusterSharding.get(kit.system());
    waiters = new Waiters(sharding, new CancelRegistry(ticker, Duration.ofSeconds(120), 1000), node);
  }

  @AfterAll
  void stopCluster() {
    kit.shutdownTestKit();
  }

  // ---- keys and repositories ------------------------------------------------------------------

  /** A repository of this test's own, with its own policy (and so its own metric labels). */
  String repo(FetchPolicy policy) {
    String name = "repo" + seq.incrementAndGet();
    policies.put(name, policy);
    return name;
  }

  String repo() {
    return repo(FetchPolicy.defaults());
  }

  /** The policy of {@code repo} (see {@link #repo(FetchPolicy)}). */
  FetchPolicy policy(String repo) {
    return policies.getOrDefault(repo, FetchPolicy.defaults());
  }

  /** An upstream URL no other test uses. */
  String url(String name) {
    return "http://127.0.0.1:9/" + name + "/" + seq.incrementAndGet();
  }

  ArtifactKey key(String name) {
    return ArtifactKey.of("r", url(name));
  }

  static FetchPolicy policy(long inlineLimit, Duration negativeTtl, Duration budget, int maxWaiters,
      int maxOrphans) {
    return new FetchPolicy(inlineLimit, negativeTtl, budget, false, maxWaiters, maxOrphans);
  }

  static FetchPolicy withBudget(Duration budget) {
    FetchPolicy d = FetchPolicy.defaults();
    return policy(d.inlineLimit(), d.negativeTtl(), budget, d.maxWaiters(), d.maxOrphanFetches());
  }

  static FetchPolicy withInlineLimit(long limit) {
    FetchPolicy d = FetchPolicy.defaults();
    return policy(limit, d.negativeTtl(), d.waiterBudget(), d.maxWaiters(), d.maxOrphanFetches());
  }

  static FetchPolicy withMaxWaiters(int max) {
    FetchPolicy d = FetchPolicy.defaults();
    return policy(d.inlineLimit(), d.negativeTtl(), d.waiterBudget(), max, d.maxOrphanFetches());
  }

  static FetchPolicy withMaxOrphans(int max) {
    FetchPolicy d = FetchPolicy.defaults();
    return policy(d.inlineLimit(), d.negativeTtl(), d.waiterBudget(), d.maxWaiters(), max);
  }

  // ---- waiting --------------------------------------------------------------------------------

  CompletableFuture<Waiters.Answer> ask(ArtifactKey key) {
    return waiters.await(key, waiters.cancels().reserve()).toCompletableFuture();
  }

  /** Asks as a request for mutable metadata does. */
  CompletableFuture<Waiters.Answer> askMutable(ArtifactKey key) {
    return waiters.await(key, waiters.cancels().reserve(), true).toCompletableFuture();
  }

  List<CompletableFuture<Waiters.Answer>> ask(ArtifactKey key, int n) {
    List<CompletableFuture<Waiters.Answer>> answers = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      answers.add(ask(key));
    }
    return answers;
  }

  static Waiters.Answer answer(CompletableFuture<Waiters.Answer> answer) {
    try {
      return answer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("no answer within " + WAIT, e);
    }
  }

  /** The entity's reply a waiter ended with, which must be of {@code type}. */
  static <T extends Reply> T reply(CompletableFuture<Waiters.Answer> answer, Class<T> type) {
    Waiters.Answered answered = assertInstanceOf(Waiters.Answered.class, answer(answer));
    return assertInstanceOf(type, answered.reply());
  }

  /**
   * Returns once the key's entity has processed every message sent to it before (from this
   * thread): messages to one entity arrive in the order they were sent. A Purge is the probe; it
   * replies after persisting an empty record, which a fetch in flight later overwrites.
   */
  void barrier(ArtifactKey key) {
    try {
      entity(key).<Done>ask(FetchEntity.Purge::new, WAIT).toCompletableFuture()
          .get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError("the entity of " + key + " did not answer", e);
    }
  }

  EntityRef<FetchEntity.Command> entity(ArtifactKey key) {
    return sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id());
  }

  void awaitAssert(Runnable assertion) {
    kit.createTestProbe().awaitAssert(WAIT, () -> {
      assertion.run();
      return null;
    });
  }

  void awaitRequests(String url, int n) {
    awaitAssert(() -> assertEquals(n, upstream.count(url), "upstream requests for " + url));
  }

  double fallthrough(String repo, String reason) {
    return events.get("fallthrough|" + repo + "|" + reason);
  }

  double inflight(String repo) {
    return events.get("inflight|" + repo);
  }

  /** Deterministic pseudo-random bytes. */
  static ByteString bytes(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return ByteString.fromArray(b);
  }

  /**
   * The tests' source of interval time: it moves only when a test {@link #advance advances} it,
   * and {@link #scheduler} runs the node's timers (budgets, re-asks, retry pauses) in its time.
   * {@link #clock()} is the wall clock plus the same advances, which stamps the store's
   * fetched-at times.
   */
  static final class MovableTicker implements Ticker {
    private final AtomicLong offset = new AtomicLong();
    private final List<Runnable> onAdvance = new CopyOnWriteArrayList<>();

    Clock clock() {
      return new Clock() {
        @Override
        public ZoneId getZone() {
          return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
          throw new UnsupportedOperationException();
        }

        @Override
        public Instant instant() {
          return Instant.ofEpochMilli(millis());
        }

        @Override
        public long millis() {
          return System.currentTimeMillis() + offset.get() / 1_000_000;
        }
      };
    }

    @Override
    public long read() {
      return 1_000_000_000L + offset.get();
    }

    /** Moves time on; returns once every timer of the node due by then has run. */
    void advance(Duration d) {
      if (d.isNegative()) {
        throw new IllegalArgumentException("time does not go back: " + d);
      }
      offset.addAndGet(d.toNanos());
      onAdvance.forEach(Runnable::run);
    }

    void onAdvance(Runnable listener) {
      onAdvance.add(listener);
    }
  }
}
