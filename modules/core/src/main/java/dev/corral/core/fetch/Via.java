package dev.corral.core.fetch;

/** How an answer relates to the upstream, for the {@code X-Cache} header. */
public enum Via { MISS, COALESCED, HIT, NEGATIVE, STALE, REVALIDATED, PEER, BYPASS }
