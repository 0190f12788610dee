package dev.corral.core.wait;

import dev.corral.core.fetch.Node;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.FetchEvents;
import dev.corral.core.fetch.Reply;
import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Lifetime;
import dev.corral.core.download.Failure;
import dev.corral.core.wait.CancelRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;

/**
 * The waiting side, on the node a request arrived at: asks the key's entity and waits, within the
 * repository's budget, for the outcome to begin (SEMANTICS W3).
 *
 * <ul>
 *   <li>An entity that stopped without an outcome (L2) is asked again after a short pause (so
 *       its shard has noticed the stop), never the upstream.
 *   <li>An ask unanswered for {@link #ASK_AGAIN} is sent again (a Join lost with a stopping
 *       entity); the entity replaces the waiter's earlier registration, so nothing is counted
 *       twice.
 *   <li>When the budget runs out the answer is {@link TimedOut}; the caller answers 504 or
 *       bypasses the cache, as the repository says.
 *   <li>Every timer here (budgets, re-asks, the pauses before asking again) runs on the node's
 *       {@link Node#scheduler()}, in the time of its {@link Node#ticker()}.
 *   <li>Concurrent waiters of one node for one key share one ask ({@link SharedAsks}): one ask
 *       per node per key reaches the entity; each waiter keeps its own budget and cancellation.
 *   <li>A waiter whose client went away is answered {@link Cancelled} at once (C1) and its
 *       registration is removed from the entity (C2); the others are not disturbed (C3).
 * </ul>
 */
public final class Waiters {
  /** How long one ask may go unanswered before it is sent again (on the node's scheduler). */
  public static final Duration ASK_AGAIN = Duration.ofSeconds(5);

  /** What a waiter ends with. */
  public sealed interface Answer {}

  public record Answered(Reply reply) implements Answer {}

  public enum TimedOut implements Answer { INSTANCE }

  public enum Cancelled implements Answer { INSTANCE }

  private final CancelRegistry cancels;
  private final Node node;
  private final SharedAsks shared;

  /** Waiters that cannot copy bytes from other nodes (a one-node setup, tests). */
  public Waiters(ClusterSharding sharding, CancelRegistry cancels, Node node) {
    this(sharding, cancels, node, null);
  }

  /** @param system runs copies of bytes held by other nodes */
  public Waiters(ClusterSharding sharding, CancelRegistry cancels, Node node, ActorSystem<?> system) {
    this.cancels = cancels;
    this.node = node;
    this.shared = new SharedAsks(sharding, node, system);
  }

  public CancelRegistry cancels() {
    return cancels;
  }

  /** Joins this node has sent to fetch entities (one per shared ask, plus re-asks). */
  public long joinsSent() {
    return shared.joinsSent();
  }

  /**
   * Waits for the key's outcome.
   *
   * @param token this waiter's cancel token, reserved from {@link #cancels()} by the caller,
   *     which cancels it when the client's connection closes; released here when the wait ends
   */
  public CompletionStage<Answer> await(ArtifactKey key, long token) {
    return await(key, token, false);
  }

  /**
   * Waits for the key's outcome.
   *
   * @param mutable the key is mutable metadata (see {@link FetchEntity.Join#mutable()})
   */
  public CompletionStage<Answer> await(ArtifactKey key, long token, boolean mutable) {
    return await(key, token, Lifetime.of(mutable));
  }

  /**
   * Waits for the key's outcome.
   *
   * @param lifetime how long the key's stored copy is fresh (see {@link FetchEntity.Join#lifetime()})
   */
  public CompletionStage<Answer> await(ArtifactKey key, long token, Lifetime lifetime) {
    CompletableFuture<Answer> result = new CompletableFuture<>();
    AtomicReference<SharedAsks.Local> attached = new AtomicReference<>();
    boolean live = cancels.register(token, () -> {
      if (result.complete(Cancelled.INSTANCE)) {
        leave(attached);
      }
    });
    if (live) {
      SharedAsks.Local local = shared.attach(key, token, lifetime, reply -> result.complete(new Answered(reply)));
      if (local == null) {
        result.complete(new Answered(new Reply.Failed(Failure.TOO_MANY_WAITERS, "too many requests waiting for this artifact")));
      } else {
        attached.set(local);
        if (result.isDone()) {
          leave(attached); // cancelled while attaching
        } else {
          // The budget runs on the node's scheduler, in the node's time (a manual one in tests).
          long budget = node.policy(key.repo()).waiterBudget().toNanos();
          AtomicReference<Future<?>> timer = new AtomicReference<>();
          budget(result, attached, budget, timer);
          result.whenComplete((answer, error) -> timer.get().cancel(false)); // answered: forget the timer
        }
      }
    }
    // Counted before the caller hears of it, so a client answered 504 finds the fall-through
    // in the metrics.
    return result.whenComplete((answer, error) -> {
      if (answer == TimedOut.INSTANCE) {
        node.events().fellThrough(key.repo(), FetchEvents.FallThrough.BUDGET, 1);
      }
      cancels.release(token);
    });
  }

  /**
   * Arms the waiter's budget. When it runs out the waiter's outcome is checked: one that has
   * begun (status and headers known, W3; a small, chunked or compressed body is answered only
   * once complete) is waited for through another budget, so a slow body is bounded by the
   * upstream's idle timeout, not by the budget; otherwise the waiter is timed out.
   */
  private void budget(CompletableFuture<Answer> result, AtomicReference<SharedAsks.Local> attached, long budget,
      AtomicReference<Future<?>> timer) {
    timer.set(node.scheduler().schedule(node.io(), () -> {
      SharedAsks.Local local = attached.get();
      if (local == null || result.isDone()) {
        return;
      }
      shared.begun(local).whenComplete((begun, error) -> {
        if (Boolean.TRUE.equals(begun)) {
          if (!result.isDone()) {
            budget(result, attached, budget, timer);
            if (result.isDone()) {
              timer.get().cancel(false); // answered while the budget was armed again
            }
          }
        } else if (result.complete(TimedOut.INSTANCE)) {
          leave(attached);
        }
      });
    }, budget, TimeUnit.NANOSECONDS));
  }

  private void leave(AtomicReference<SharedAsks.Local> attached) {
    SharedAsks.Local local = attached.getAndSet(null);
    if (local != null) {
      shared.detach(local);
    }
  }
}
