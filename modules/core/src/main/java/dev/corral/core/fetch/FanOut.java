package dev.corral.core.fetch;

import java.time.Duration;
import java.util.Objects;

/**
 * How the key's entity spreads copies over the nodes that can serve them (issue 17, docs/scale.md
 * "Fan-out"): with {@code on}, a node that needs the bytes is pointed at the least-loaded source
 * (the entity's node, a node still receiving its copy, or a committed holder) with fewer than
 * {@code cap} copies pointed at it; with none free it waits for a slot, and past {@code waitBound}
 * (with no pointed copy still on its way) it is pointed at the entity's node. Off: every copy comes
 * from the entity's node, as before fan-out.
 *
 * @param on {@code --peer-fanout}
 * @param cap {@code --peer-upload-cap}: copies of the key the entity points at one node at
 *     once (advisory: the node's peer endpoint refuses none)
 * @param waitBound {@code --peer-wait-bound}
 */
public record FanOut(boolean on, int cap, Duration waitBound) {
  /**
   * On, 2 uploads, 1 s: the server's default settings (corral-defaults.conf), and a node's until
   * the server sets its own (in-JVM tests of the entity).
   */
  public static final FanOut DEFAULT = new FanOut(true, 2, Duration.ofSeconds(1));
  /** Owner-only: every copy from the entity's node. */
  public static final FanOut OFF = new FanOut(false, 2, Duration.ofSeconds(1));

  public FanOut {
    Objects.requireNonNull(waitBound, "waitBound");
    if (cap < 1) {
      throw new IllegalArgumentException("the upload cap must be at least 1: " + cap);
    }
    if (waitBound.isNegative()) {
      throw new IllegalArgumentException("the wait bound must not be negative: " + waitBound);
    }
  }
}
