package dev.corral.core.fetch;

import dev.corral.core.ArtifactKey;
import dev.corral.core.CancelRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

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
 *   <li>A waiter whose client went away is answered {@link Cancelled} at once (C1) and its
 *       registration is removed from the entity (C2); the others are not disturbed (C3).
 * </ul>
 */
public final class Waiters {
  /** How long one ask may go unanswered before it is sent again. */
  static final Duration ASK_AGAIN = Duration.ofSeconds(5);
  private static final Duration FIRST_RETRY_PAUSE = Duration.ofMillis(20);
  private static final Duration MAX_RETRY_PAUSE = Duration.ofMillis(500);

  /** What a waiter ends with. */
  public sealed interface Answer {}

  public record Answered(FetchEntity.Reply reply) implements Answer {}

  public enum TimedOut implements Answer { INSTANCE }

  public enum Cancelled implements Answer { INSTANCE }

  private final ClusterSharding sharding;
  private final CancelRegistry cancels;
  private final Node node;
  public Waiters(ClusterSharding sharding, CancelRegistry cancels, Node node) {
    this.sharding = sharding;
    this.cancels = cancels;
    this.node = node;
  }

  public CancelRegistry cancels() {
    return cancels;
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
    EntityRef<FetchEntity.Command> entity = sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id());
    CompletableFuture<Answer> result = new CompletableFuture<>();
    boolean live = cancels.register(token, () -> {
      if (result.complete(Cancelled.INSTANCE)) {
        entity.tell(new FetchEntity.Leave(token));
      }
    });
    if (live) {
      long deadline = node.ticker().read() + node.policy(key.repo()).waiterBudget().toNanos();
      new Wait(entity, key, token, mutable, deadline, result).ask();
    }
    return result.whenComplete((answer, error) -> cancels.release(token));
  }

  /** One waiter's asks. */
  private final class Wait {
    final EntityRef<FetchEntity.Command> entity;
    final ArtifactKey key;
    final long token;
    final boolean mutable;
    final long deadline;
    final CompletableFuture<Answer> result;
    Duration retryPause = FIRST_RETRY_PAUSE;

    Wait(EntityRef<FetchEntity.Command> entity, ArtifactKey key, long token, boolean mutable,
        long deadline, CompletableFuture<Answer> result) {
      this.entity = entity;
      this.key = key;
      this.token = token;
      this.mutable = mutable;
      this.deadline = deadline;
      this.result = result;
    }

    void ask() {
      if (result.isDone()) {
        return;
      }
      long remaining = deadline - node.ticker().read();
      if (remaining <= 0) {
        giveUp();
        return;
      }
      Duration timeout = Duration.ofNanos(Math.min(remaining, ASK_AGAIN.toNanos()));
      CompletionStage<FetchEntity.Reply> asked =
          entity.ask(replyTo -> new FetchEntity.Join(key, token, replyTo, mutable), timeout);
      if (result.isDone()) {
        // Cancelled while the Join was sent: its Leave may have overtaken the Join, so send one
        // more after it (same sender, same order).
        entity.tell(new FetchEntity.Leave(token));
        return;
      }
      asked.whenComplete((reply, error) -> {
            if (result.isDone()) {
              return;
            }
            if (error != null) {
              if (error instanceof TimeoutException || error.getCause() instanceof TimeoutException) {
                ask(); // unanswered: ask again, or give up once the budget is spent
              } else {
                giveUp();
              }
            } else if (reply instanceof FetchEntity.Retry) {
              node.metrics().fallthrough.labelValues(key.repo(), "entity-stopped").inc();
              Duration pause = retryPause;
              retryPause = pause.multipliedBy(2).compareTo(MAX_RETRY_PAUSE) > 0 ? MAX_RETRY_PAUSE : pause.multipliedBy(2);
              CompletableFuture.delayedExecutor(pause.toMillis(), TimeUnit.MILLISECONDS, node.io())
                  .execute(this::ask);
            } else {
              result.complete(new Answered(reply));
            }
          });
    }

    void giveUp() {
      if (result.isDone()) {
        return;
      }
      if (result.complete(TimedOut.INSTANCE)) {
        node.metrics().fallthrough.labelValues(key.repo(), "budget").inc();
        entity.tell(new FetchEntity.Leave(token));
      }
    }
  }
}
