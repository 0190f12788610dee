package dev.corral.core.download;

/** Why a fetch failed; the front door turns each into its status (502, 504, 503). */
public enum Failure {
  /** The upstream answered an error, or the transfer broke (after the fetch's retries). */
  UPSTREAM_ERROR,
  /** The upstream did not answer in time. */
  UPSTREAM_TIMEOUT,
  /** The upstream's queue of requests waiting for a connection was full: nothing was sent (503). */
  UPSTREAM_BUSY,
  /** The bytes did not match their expected digest: nothing was stored (SEMANTICS B1). */
  BAD_BYTES,
  /** The waiter was refused: the key already has its maximum of waiters (F4). */
  TOO_MANY_WAITERS,
  /** This node could not read the bytes from another node. */
  PEER_ERROR,
  /** A fault of Corral's own while fetching or storing (logged where it happened). */
  INTERNAL
}
