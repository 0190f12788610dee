package dev.corral.core.fetch;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/** Counts what core reports, per repository (and reason), for the entity tests. */
final class CountingEvents implements FetchEvents {
  private final ConcurrentHashMap<String, LongAdder> counts = new ConcurrentHashMap<>();

  private void add(String name, long n) {
    counts.computeIfAbsent(name, k -> new LongAdder()).add(n);
  }

  long get(String name) {
    LongAdder a = counts.get(name);
    return a == null ? 0 : a.sum();
  }

  @Override
  public void fetchStarted(String repo) {
    add("inflight|" + repo, 1);
  }

  @Override
  public void fetchCompleted(String repo, Duration took) {
    add("completed|" + repo, 1);
  }

  @Override
  public void fetchEnded(String repo) {
    add("inflight|" + repo, -1);
  }

  @Override
  public void fellThrough(String repo, FallThrough reason, int waiters) {
    add("fallthrough|" + repo + "|" + reason.label(), waiters);
  }
}
