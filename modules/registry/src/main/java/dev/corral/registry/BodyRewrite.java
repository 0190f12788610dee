package dev.corral.registry;

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
}
