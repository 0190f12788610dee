package dev.corral.core.wait;

import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.Peers;
import dev.corral.core.fetch.Via;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.FetchEvents;
import dev.corral.core.fetch.Reply;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.download.Download;
import dev.corral.core.download.Failure;
import dev.corral.core.download.Outcome;
import dev.corral.core.store.BlobWriter;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Lifetime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node-level half of two-level coalescing (groupcache's singleflight, with actors): however
 * many local requests wait for one key, this node has ONE ask at the key's entity, and at most one
 * copy of the bytes from another node. Local waiters attach to the key's pending ask and are
 * answered together; each keeps its own budget and cancellation (in {@link Waiters}): one leaving
 * only detaches it, and the last one leaving tells the entity {@code Leave} (SEMANTICS W3, C1-C3).
 *
 * <p>The shared ask re-asks on an unanswered ask ({@link Waiters#ASK_AGAIN}) and after
 * {@code Retry} (the entity stopped, or its node died), like a single waiter, for as long as any
 * local waiter is attached. Both timers run on the node's {@link Node#scheduler()}. Its token is random (64 bits), so it is unique across the cluster's
 * nodes, whose cancel registries hand out overlapping numbers.
 *
 * <p>Replies made for another node come back through {@link Peers#arrived}: a small body,
 * already checked against its SHA-256, is answered at once and kept as a replica; a copy is made
 * once from the other node into this node's store (a download whose origin is that node), which
 * local waiters stream while it grows, exactly as they stream a local download. A copy committed
 * here is announced to the entity ({@code Holding}), so the key's record lists this node as a
 * holder.
 */
final class SharedAsks {
  private static final Logger log = LoggerFactory.getLogger(SharedAsks.class);
  private static final Duration FIRST_RETRY_PAUSE = Duration.ofMillis(20);
  private static final Duration MAX_RETRY_PAUSE = Duration.ofMillis(500);
  /** How often one ask is made again after a holder's copy failed (W2's bounded retries). */
  static final int MAX_HOLDER_FAILURES = 1;

  private final ClusterSharding sharding;
  private final Node node;
  private final ActorSystem<?> system;
  /** Pending asks and running copies, by key id; guarded by {@code this}. */
  private final Map<String, Shared> pending = new HashMap<>();
  private final LongAdder joinsSent = new LongAdder();

  SharedAsks(ClusterSharding sharding, Node node, ActorSystem<?> system) {
    this.sharding = sharding;
    this.node = node;
    this.system = system;
  }

  /** One local waiter: answered through {@code answer}. */
  final class Local {
    final long token;
    final Consumer<Reply> answer;
    final Shared shared;

    Local(long token, Consumer<Reply> answer, Shared shared) {
      this.token = token;
      this.answer = answer;
      this.shared = shared;
    }
  }

  /** Joins sent to entities by this node (each ask and re-ask); for tests and diagnostics. */
  long joinsSent() {
    return joinsSent.sum();
  }

  /**
   * Attaches a waiter to the key's shared ask, starting the ask when it is the first. Returns
   * null when the key already has the repository's maximum of local waiters (the caller answers
   * 503).
   */
  Local attach(ArtifactKey key, long token, Lifetime lifetime, Consumer<Reply> answer) {
    Shared s;
    Local local;
    boolean first;
    Reply ready = null;
    synchronized (this) {
      s = pending.get(key.id());
      // An ask whose waiters all left is not joined (it asks no more), unless its copy streams.
      first = s == null || (s.answered && s.copying == null);
      if (first) {
        s = new Shared(key, lifetime);
        pending.put(key.id(), s);
      }
      if (s.copying != null) {
        // A copy from a peer is already streaming here: join it, ask nobody (<= 1 transfer per node).
        ready = Reply.of(s.copying, Via.COALESCED);
        local = new Local(token, answer, s);
      } else {
        if (s.locals.size() >= node.policy(key.repo()).maxWaiters()) {
          return null;
        }
        local = new Local(token, answer, s);
        s.locals.add(local);
        if (first) {
          s.leader = token;
        }
      }
    }
    if (ready != null) {
      answer.accept(ready);
    } else if (first) {
      s.ask();
    }
    return local;
  }

  /** The waiter left (its client went away, or its budget ran out); the last one out sends Leave. */
  void detach(Local local) {
    Shared s = local.shared;
    boolean last;
    boolean copyRunning;
    synchronized (this) {
      boolean removed = s.locals.remove(local);
      last = removed && s.locals.isEmpty() && !s.answered;
      copyRunning = s.copyRunning;
      if (last) {
        s.answered = true; // abandoned: no more asks
        if (s.copying == null && pending.get(s.key.id()) == s && !copyRunning) {
          pending.remove(s.key.id());
        }
      }
    }
    if (last && !copyRunning) {
      s.entity.tell(new FetchEntity.Leave(s.token));
    }
  }

  /**
   * How long this node waits for the entity to say whether a fetch has begun; no answer in time
   * counts as not begun (the waiter whose budget ran out is then answered as before).
   */
  static final Duration BEGUN_ASK_TIMEOUT = Duration.ofSeconds(2);

  /**
   * Whether the outcome the waiter waits for has begun (W3): this node copies it from a peer
   * already, or the entity's fetch has its status and headers. Concurrent checks of one ask share
   * one {@link FetchEntity.AskBegun}.
   */
  CompletionStage<Boolean> begun(Local local) {
    Shared s = local.shared;
    CompletableFuture<Boolean> check;
    synchronized (this) {
      if (s.copyRunning) {
        return CompletableFuture.completedFuture(true);
      }
      if (s.begunCheck != null) {
        return s.begunCheck;
      }
      check = new CompletableFuture<>();
      s.begunCheck = check;
    }
    s.entity.<FetchEntity.Begun>ask(replyTo -> new FetchEntity.AskBegun(s.token, replyTo), BEGUN_ASK_TIMEOUT)
        .whenComplete((answer, error) -> {
          synchronized (SharedAsks.this) {
            if (s.begunCheck == check) {
              s.begunCheck = null;
            }
          }
          check.complete(error == null && answer.begun());
        });
    return check;
  }

  /** One key's ask on this node, then maybe its copy from a peer. */
  final class Shared {
    final ArtifactKey key;
    final Lifetime lifetime;
    final EntityRef<FetchEntity.Command> entity;
    final long token = ThreadLocalRandom.current().nextLong();
    final List<Local> locals = new ArrayList<>();
    long leader;
    /** Every attached waiter was answered, or all of them left. */
    boolean answered;
    /**
     * A copy from a peer was decided on (under the monitor) and is started or running; it is
     * started outside the monitor (K2: starting it asks the peer and may open files).
     */
    boolean copyRunning;
    /** The copy's growing local download, once its headers are known. */
    Outcome.Streaming copying;
    Duration retryPause = FIRST_RETRY_PAUSE;
    /** Copies of this ask that failed by their holder's fault; guarded by {@code SharedAsks.this}. */
    int holderFailures;
    /** The running copy, once started (set outside the monitor's decision, under it). */
    Download copy;
    /** The copy holds one of this node's orphan slots: nobody here reads it (C3). */
    boolean orphanSlot;
    /** The {@link FetchEntity.AskBegun} in flight for this ask, if any. */
    CompletableFuture<Boolean> begunCheck;

    Shared(ArtifactKey key, Lifetime lifetime) {
      this.key = key;
      this.lifetime = lifetime;
      this.entity = sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id());
    }

    void ask() {
      synchronized (SharedAsks.this) {
        if (answered) {
          return;
        }
      }
      joinsSent.increment();
      // Asking again is this node's timer, on its scheduler: whichever of the reply and the timer
      // comes first settles this ask, and the other does nothing (a reply after the timer is
      // dropped, as Pekko drops one after its ask timeout). Pekko's timeout only bounds how long
      // the ask's temporary actor lives: past every local waiter's budget, when no reply matters.
      Duration askLifetime = node.policy(key.repo()).waiterBudget().plus(Waiters.ASK_AGAIN);
      CompletionStage<Reply> asked =
          entity.ask(replyTo -> new FetchEntity.Join(key, token, replyTo, lifetime, node.peers().self().orElse(null)),
              askLifetime);
      boolean abandoned;
      synchronized (SharedAsks.this) {
        abandoned = answered && locals.isEmpty();
      }
      if (abandoned) {
        // Every waiter left while the Join was sent: its Leave may have overtaken the Join.
        entity.tell(new FetchEntity.Leave(token));
        return;
      }
      AtomicBoolean settled = new AtomicBoolean();
      Future<?> again = node.scheduler().schedule(node.io(), () -> {
        if (settled.compareAndSet(false, true)) {
          ask(); // unanswered (a Join lost with a stopping entity or a dead node): ask again
        }
      }, Waiters.ASK_AGAIN.toNanos(), TimeUnit.NANOSECONDS);
      // A reply from another node is delivered on Artery's inbound thread, which every message
      // from that node shares: decoding it (hashing an inline body), answering the waiters (whose
      // callbacks rewrite and parse bodies) and storing a replica hop to the node's I/O dispatcher
      // first (K2). Everything else may read files, so it goes to the common pool as before.
      asked.whenCompleteAsync((reply, error) -> {
        if (error != null && isTimeout(error)) {
          return; // Pekko's own timeout: the timer above asks again
        }
        if (!settled.compareAndSet(false, true)) {
          return; // asked again already
        }
        again.cancel(false);
        if (error == null && reply instanceof Reply.ForAnotherNode remote) {
          node.io().execute(() -> arrived(node.peers().arrived(remote)));
        } else {
          ForkJoinPool.commonPool().execute(() -> asked(reply, error));
        }
      }, Runnable::run);
    }

    private void asked(Reply reply, Throwable error) {
      if (error != null) {
        later();
      } else if (reply instanceof Reply.Retry) {
        int waiting;
        synchronized (SharedAsks.this) {
          waiting = locals.size();
        }
        // Counted per waiting request, as a single waiter's ask would be.
        node.events().fellThrough(key.repo(), FetchEvents.FallThrough.ENTITY_STOPPED, Math.max(1, waiting));
        later();
      } else {
        resolve(reply);
      }
    }

    /**
     * Asks again after a pause (doubling up to 500 ms, on the node's scheduler), so the shard has
     * noticed a stop.
     */
    void later() {
      Duration pause = retryPause;
      retryPause = pause.multipliedBy(2).compareTo(MAX_RETRY_PAUSE) > 0 ? MAX_RETRY_PAUSE : pause.multipliedBy(2);
      node.scheduler().schedule(node.io(), this::ask, pause.toNanos(), TimeUnit.NANOSECONDS);
    }

    /** A reply other than one from another node (those are answered where they arrive, see ask()). */
    private void resolve(Reply reply) {
      answer(reply, true);
    }

    /**
     * A reply from another node, on the node's I/O dispatcher (never Artery's inbound thread): a
     * small body (already checked against its SHA-256) is answered at once, then kept as a replica
     * here; a copy is started.
     */
    private void arrived(Peers.Arrival arrival) {
      if (arrival instanceof Peers.Arrival.Body b) {
        answer(b.reply(), true);
        keepReplica(b);
      } else if (arrival instanceof Peers.Arrival.Copy c) {
        startCopy(c);
      } else {
        Reply.Failed refused = ((Peers.Arrival.Refused) arrival).reply();
        log.warn("a reply for {} from another node was refused: {}", key, refused.reason());
        answer(refused, true);
      }
    }

    private void keepReplica(Peers.Arrival.Body in) {
      if (Download.saysNotStored(in.reply().headers()) || node.store().lookup(key).isPresent()) {
        return; // a body the upstream said no-store of is answered, never kept
      }
      BlobWriter writer = null;
      try {
        writer = node.store().newBlob(key.expected() == null ? null : key.expected().jcaName());
        writer.write(in.reply().bytes());
        writer.seal();
        if (writer.sha256().equals(in.sha256())) {
          List<Header> headers = in.reply().headers();
          // as old as the holder's copy (mutable metadata stays stale), from the first moment
          StoredArtifact a = node.store().commit(key, writer, headers, in.fetchedAtMillis());
          node.hot().put(a.sha256(), in.reply().bytes());
          holding(a);
        }
      } catch (Exception e) {
        log.warn("could not keep a replica of {}: {}", key, e.toString());
      } finally {
        if (writer != null) {
          writer.close();
        }
      }
    }

    /** One copy per node: every local waiter streams it while it grows. */
    private void startCopy(Peers.Arrival.Copy from) {
      if (system == null) {
        answer(new Reply.Failed(Failure.PEER_ERROR, "this node cannot read from peers"), true);
        return;
      }
      Download.Origin origin = new Download.Origin(from.source(), from.sha256(), from.headers(), false,
          from.fetchedAtMillis());
      Via via = from.via();
      boolean warn = from.revalidationFailed();
      // Decided under the monitor, started outside it: starting asks the peer and may open files,
      // and every other key's waiters on this node attach under the same monitor (K2).
      synchronized (SharedAsks.this) {
        if (answered && locals.isEmpty()) {
          pending.remove(key.id(), this);
          return; // every waiter left meanwhile
        }
        copyRunning = true;
      }
      Download started = node.downloads().start(key, node.policy(key.repo()).inlineLimit(), null, system, origin,
          streaming -> {
            synchronized (SharedAsks.this) {
              copying = streaming;
            }
            answer(relayed(Reply.of(streaming, via), warn), false);
            node.downloads().find(streaming.downloadId()).ifPresent(blob -> blob.whenUnread(this::unread));
            // Issue 17: the copy's headers checked out; other nodes may read it while it grows.
            node.peers().self().ifPresent(self -> entity.tell(new FetchEntity.Copying(self, streaming.downloadId())));
          },
          outcome -> copied(from, outcome, via, warn));
      synchronized (SharedAsks.this) {
        if (copyRunning) {
          copy = started;
        }
      }
    }

    /**
     * C3: nobody on this node reads the copy any more. It runs on to warm this node's store when
     * the repository has a free orphan slot here, else it is aborted (and forgotten at once, so a
     * new request asks again rather than joining it).
     */
    private void unread() {
      Download aborted;
      synchronized (SharedAsks.this) {
        if (orphanSlot || copy == null) {
          return;
        }
        if (node.tryTakeOrphanSlot(key.repo())) {
          orphanSlot = true;
          return;
        }
        aborted = copy;
        pending.remove(key.id(), this);
      }
      aborted.abort("nobody reads this node's copy and the repository's orphan fetch slots are full");
    }

    private void copied(Peers.Arrival.Copy from, Outcome outcome, Via via, boolean warn) {
      boolean slot;
      synchronized (SharedAsks.this) {
        slot = orphanSlot;
        orphanSlot = false;
      }
      if (slot) {
        node.releaseOrphanSlot(key.repo());
      }
      StoredArtifact committed = outcome instanceof Outcome.Body b ? b.artifact()
          : outcome instanceof Outcome.Stored s ? s.artifact() : null;
      if (committed != null) {
        holding(committed);
      } else {
        // Issue 17: the upload the entity pointed this node to is over (sent before any new ask).
        node.peers().self().ifPresent(self -> entity.tell(new FetchEntity.CopyEnded(self,
            outcome instanceof Outcome.Failed f ? f.cause().name() : outcome.getClass().getSimpleName())));
      }
      boolean failedByHolder = holderFailed(from, outcome);
      boolean retry;
      synchronized (SharedAsks.this) {
        pending.remove(key.id(), this);
        retry = !answered && (outcome instanceof Outcome.Unavailable
            || (failedByHolder && holderFailures++ < MAX_HOLDER_FAILURES));
        if (retry) {
          // The peer no longer had it (a download that just ended, a node that died): ask again.
          copyRunning = false;
          copy = null;
          pending.putIfAbsent(key.id(), this);
        }
      }
      if (retry) {
        later();
      } else {
        answer(relayed(Reply.of(outcome, via), warn), true);
      }
    }

    /**
     * Issue 13 item 4 on the waiter's node: a copy of a holder's committed blob that failed by the
     * holder's fault (it no longer had it, the transfer broke past resuming, the bytes were short
     * or not the recorded ones) tells the entity that holder dropped the bytes, so the record stops
     * offering it; the ask is then made again (once) while any local waiter still waits. A copy of
     * a download still running is the entity's own fetch, which answers for itself.
     */
    private boolean holderFailed(Peers.Arrival.Copy from, Outcome outcome) {
      if (from.sha256() == null || !(from.source() instanceof Peers.HolderCopy copy)
          || !Peers.HolderCopy.failedBy(outcome)) {
        return false;
      }
      for (String holder : copy.asked()) {
        log.warn("the copy of {} from {} failed ({}); telling its entity that node no longer holds it",
            key, holder, outcome);
        entity.tell(new FetchEntity.Dropped(holder));
      }
      return true;
    }

    private void holding(StoredArtifact a) {
      node.peers().self().ifPresent(self -> entity.tell(new FetchEntity.Holding(self, a.sha256())));
    }

    /**
     * Answers every attached waiter: the first local waiter gets the entity's {@code Via}, the
     * others joined its ask ({@code MISS} becomes {@code COALESCED}).
     *
     * @param forget whether the key's entry goes now (false while a copy still streams: later
     *     local requests join it)
     */
    private void answer(Reply reply, boolean forget) {
      List<Local> answered;
      synchronized (SharedAsks.this) {
        if (forget && !copyRunning) {
          pending.remove(key.id(), this);
        }
        if (this.answered) {
          return;
        }
        this.answered = true;
        answered = new ArrayList<>(locals);
        locals.clear();
      }
      for (Local l : answered) {
        l.answer.accept(l.token == leader ? reply : coalesced(reply));
      }
    }
  }

  /**
   * A copy relayed from another node as it is answered here: when the entity said the last
   * revalidation failed, a stored copy is a {@link Reply.Stale} saying so and bytes still in
   * flight carry {@link Reply#REVALIDATION_FAILED} in their headers (never stored).
   */
  static Reply relayed(Reply reply, boolean revalidationFailed) {
    if (!revalidationFailed) {
      return reply;
    }
    if (reply instanceof Reply.Stored s) {
      return new Reply.Stale(s.artifact(), true);
    }
    if (reply instanceof Reply.Body b) {
      return new Reply.Body(b.via(), warned(b.headers()), b.bytes());
    }
    if (reply instanceof Reply.Streaming s) {
      return new Reply.Streaming(s.via(), warned(s.headers()), s.length(), s.downloadId());
    }
    return reply;
  }

  private static List<Header> warned(List<Header> headers) {
    List<Header> out = new ArrayList<>(headers);
    out.add(Reply.REVALIDATION_FAILED);
    return out;
  }

  /** The reply as another local waiter of the same ask sees it. */
  static Reply coalesced(Reply reply) {
    if (reply instanceof Reply.Body b && b.via() == Via.MISS) {
      return new Reply.Body(Via.COALESCED, b.headers(), b.bytes());
    }
    if (reply instanceof Reply.Stored s && s.via() == Via.MISS) {
      return new Reply.Stored(Via.COALESCED, s.artifact());
    }
    if (reply instanceof Reply.NotFound nf && nf.via() == Via.MISS) {
      return new Reply.NotFound(Via.COALESCED, nf.gone(), nf.headers());
    }
    if (reply instanceof Reply.Streaming s && s.via() == Via.MISS) {
      return new Reply.Streaming(Via.COALESCED, s.headers(), s.length(), s.downloadId());
    }
    return reply;
  }

  private static boolean isTimeout(Throwable error) {
    return error instanceof TimeoutException || error.getCause() instanceof TimeoutException;
  }
}
