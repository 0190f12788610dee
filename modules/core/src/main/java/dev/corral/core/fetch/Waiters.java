package dev.corral.core.fetch;

import dev.corral.core.ArtifactKey;
import dev.corral.core.CancelRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.cluster.sharding.typed.javadsl.EntityRef;

/**
 * The waiting side, on the node a request arrived at: asks the key's entity and waits, within the
 * repository's budget, for the outcome to begin (SEMANTICS W3).
 *
 * <ul>
 *   <li>An entity that stopped without an outcome (L2) is asked again, never the upstream.
 *   <li>When the budget runs out the answer is {@link TimedOut}; the caller answers 504 or
 *       bypasses the cache, as the repository says.
 *   <li>A waiter whose client went away is answered {@link Cancelled} at once (C1) and its
 *       registration is removed from the entity (C2); the others are not disturbed (C3).
 * </ul>
 */
public final class Waiters {

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
    EntityRef<FetchEntity.Command> entity = sharding.entityRefFor(FetchEntity.TYPE_KEY, key.id());
    CompletableFuture<Answer> result = new CompletableFuture<>();
    boolean live = cancels.register(token, () -> {
      if (result.complete(Cancelled.INSTANCE)) {
        entity.tell(new FetchEntity.Leave(token));
      }
    });
    if (live) {
      long deadline = node.ticker().read() + node.policy(key.repo()).waiterBudget().toNanos();
      ask(entity, key, token, deadline, result);
    }
    return result.whenComplete((answer, error) -> cancels.release(token));
  }

  private void ask(EntityRef<FetchEntity.Command> entity, ArtifactKey key, long token, long deadline,
      CompletableFuture<Answer> result) {
    long remaining = deadline - node.ticker().read();
    if (remaining <= 0) {
      giveUp(entity, key, token, result);
      return;
    }
    entity
        .<FetchEntity.Reply>ask(replyTo -> new FetchEntity.Join(key, token, replyTo), Duration.ofNanos(remaining))
        .whenComplete((reply, error) -> {
          if (result.isDone()) {
            return;
          }
          if (error != null) {
            giveUp(entity, key, token, result);
          } else if (reply instanceof FetchEntity.Retry) {
            node.metrics().fallthrough.labelValues(key.repo(), "entity-stopped").inc();
            ask(entity, key, token, deadline, result);
          } else {
            result.complete(new Answered(reply));
          }
        });
  }

  private void giveUp(EntityRef<FetchEntity.Command> entity, ArtifactKey key, long token,
      CompletableFuture<Answer> result) {
    if (result.complete(TimedOut.INSTANCE)) {
      node.metrics().fallthrough.labelValues(key.repo(), "budget").inc();
      entity.tell(new FetchEntity.Leave(token));
    }
  }
}
