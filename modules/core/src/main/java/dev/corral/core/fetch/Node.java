package dev.corral.core.fetch;

import dev.corral.core.download.Downloads;
import dev.corral.core.record.KeyRecords;
import com.github.benmanes.caffeine.cache.Scheduler;
import com.github.benmanes.caffeine.cache.Ticker;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.upstream.Upstream;
import java.time.Clock;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;
import java.util.function.Function;

/**
 * What the fetch entities and waiters of one node share: its store, its upstream client, its
 * downloads in progress, its metrics and each repository's {@link FetchPolicy}. Time is read only
 * through {@link #ticker()} (intervals) and {@link #clock()} (the age of stored copies, which
 * the store stamps with the same clock) so TTLs are tested without sleeping.
 */
public final class Node {
  private final ArtifactStore store;
  private final Upstream upstream;
  private final FetchEvents events;
  private final java.util.concurrent.atomic.AtomicInteger fetchesInFlight = new java.util.concurrent.atomic.AtomicInteger();
  private final Function<String, FetchPolicy> policies;
  private final Ticker ticker;
  private final Scheduler scheduler;
  private final Clock clock;
  private final Executor io;
  private final Downloads downloads;
  private final HotBlobs hot;
  private final KeyRecords records;
  private final Map<String, Semaphore> orphanSlots = new ConcurrentHashMap<>();
  private final Peers peers;
  private volatile boolean draining;
  private volatile FanOut fanOut = FanOut.DEFAULT;

  /**
   * @param io an executor for blocking file work (the actor system's blocking-io dispatcher)
   * @param hot the verified bytes of the most used small blobs, shared by hits and fetches
   * @param records where the fetch entities write each key's record
   */
  public Node(
      ArtifactStore store,
      HotBlobs hot,
      KeyRecords records,
      Upstream upstream,
      FetchEvents events,
      Function<String, FetchPolicy> policies,
      Ticker ticker,
      Scheduler scheduler,
      Executor io) {
    this(store, hot, records, upstream, events, policies, ticker, scheduler, Clock.systemUTC(), io, Peers.NONE);
  }

  /**
   * @param clock wall-clock time, the same as the store's: a stored copy's age is the clock's
   *     now minus {@link dev.corral.core.store.StoredArtifact#fetchedAtMillis()}
   * @param peers the cluster's other nodes ({@link Peers#NONE} for a node on its own)
   */
  public Node(
      ArtifactStore store,
      HotBlobs hot,
      KeyRecords records,
      Upstream upstream,
      FetchEvents events,
      Function<String, FetchPolicy> policies,
      Ticker ticker,
      Scheduler scheduler,
      Clock clock,
      Executor io,
      Peers peers) {
    this.peers = peers;
    this.clock = clock;
    this.hot = hot;
    this.records = records;
    this.store = store;
    this.upstream = upstream;
    this.events = events;
    this.policies = policies;
    this.ticker = ticker;
    this.scheduler = scheduler;
    this.io = io;
    this.downloads = new Downloads(store, hot, upstream, clock, io);
  }

  public ArtifactStore store() {
    return store;
  }

  public Upstream upstream() {
    return upstream;
  }

  /** Where the entities and waiters report what they do (metrics). */
  public FetchEvents events() {
    return events;
  }

  /** Fetches running on this node now; a graceful stop waits for none (SEMANTICS L4). */
  public int fetchesInFlight() {
    return fetchesInFlight.get();
  }

  /**
   * The node stops taking work (SEMANTICS L4): from now on its entities refuse Joins from other
   * nodes that would start a fetch here, so that the waiters ask again once the key's shard has
   * moved to a node that stays, instead of starting fetches that a hand-off would abort.
   */
  public void drain() {
    draining = true;
  }

  /** True once {@link #drain()} was called: the node is stopping. */
  public boolean draining() {
    return draining;
  }

  void fetchStarted(String repo) {
    fetchesInFlight.incrementAndGet();
    events.fetchStarted(repo);
  }

  void fetchEnded(String repo) {
    fetchesInFlight.decrementAndGet();
    events.fetchEnded(repo);
  }

  public FetchPolicy policy(String repo) {
    return policies.apply(repo);
  }

  public Ticker ticker() {
    return ticker;
  }

  /**
   * Runs the waiters' timers (budgets, re-asks, retry pauses) in the ticker's time: {@link
   * Timers#system()} in a running node, a manual one in tests.
   */
  public Scheduler scheduler() {
    return scheduler;
  }

  /** Wall-clock time for the age of stored copies (metadata freshness). */
  public Clock clock() {
    return clock;
  }

  public Executor io() {
    return io;
  }

  public KeyRecords records() {
    return records;
  }

  public HotBlobs hot() {
    return hot;
  }

  /** The cluster's other nodes, as the entity and the waiters see them. */
  public Peers peers() {
    return peers;
  }

  /** How copies between nodes are spread (issue 17); {@link FanOut#DEFAULT} until set. */
  public FanOut fanOut() {
    return fanOut;
  }

  /** Set once by the wiring, before the node serves. */
  public void fanOut(FanOut value) {
    this.fanOut = java.util.Objects.requireNonNull(value, "fanOut");
  }

  public Downloads downloads() {
    return downloads;
  }

  /**
   * Takes one of the repository's slots for a fetch that keeps running with no waiter left
   * (SEMANTICS C3). False when the repository already runs its maximum of such fetches. The
   * slots are this node's: its entities' fetches and its copies from other nodes nobody reads.
   */
  public boolean tryTakeOrphanSlot(String repo) {
    return orphanSlots
        .computeIfAbsent(repo, r -> new Semaphore(policy(r).maxOrphanFetches()))
        .tryAcquire();
  }

  public void releaseOrphanSlot(String repo) {
    Semaphore s = orphanSlots.get(repo);
    if (s != null) {
      s.release();
    }
  }
}
