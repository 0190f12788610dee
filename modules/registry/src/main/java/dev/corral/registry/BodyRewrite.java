package dev.corral.registry;

import java.util.Optional;
import org.apache.pekko.util.ByteString;

/**
 * Rewrites a stored metadata body for one response (upstream file URLs to Corral's own). Applied
 * each time a body is served, never to what is stored, so the base URL of one request can never
 * change what another client sees. Must be a pure function of its input; a body it cannot parse
 * is returned unchanged.
 */
@FunctionalInterface
public interface BodyRewrite {
  ByteString rewrite(ByteString stored);

  /**
   * Everything besides the body that the output depends on (the base URL, the package name):
   * the serving side remembers outputs by the stored body's digest and these inputs, so that one
   * stored version is read and rewritten once for all the requests that share them. Empty: the
   * output is not remembered.
   */
  default Optional<String> inputs() {
    return Optional.empty();
  }

  /** A rewrite whose output is determined by the body and {@code inputs}. */
  static BodyRewrite keyed(String inputs, BodyRewrite rewrite) {
    return new BodyRewrite() {
      @Override
      public ByteString rewrite(ByteString stored) {
        return rewrite.rewrite(stored);
      }

      @Override
      public Optional<String> inputs() {
        return Optional.of(inputs);
      }
    };
  }
}
