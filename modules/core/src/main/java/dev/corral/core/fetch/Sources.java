package dev.corral.core.fetch;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A key's source table (issue 17, docs/scale.md "Fan-out"): the nodes whose copy is still arriving
 * and can already be read (announced by {@link FetchEntity.Copying}), and the uploads the entity
 * has pointed at each source and not yet seen end. Owned by the key's {@link FetchEntity}, touched
 * only from its thread, kept in memory only: receiving rows are never written to the record (only
 * verified commits are holders), so a new incarnation starts from the record's holders alone.
 *
 * <p>Uploads are keyed by the copying node: a node runs at most one copy of a key at a time (its
 * {@code SharedAsks}), so its {@code Holding} or {@code CopyEnded} ends the upload it was pointed
 * to, whichever source served it in the end.
 */
final class Sources {
  /**
   * A node that can serve the bytes now: its committed blob ({@code downloadId < 0}) or its running
   * download {@code downloadId}. {@code rank}: ties go to the entity's own node (the root of the
   * tree: the shallowest source, and its peer endpoint verifies a whole blob as it sends it, so a
   * corrupt copy there is found by the first copy, F2), then a committed holder, then a receiving
   * node (the one whose copy began first).
   */
  record Row(String peerUrl, long downloadId, int rank, long since) {
    static final int OWNER = 0;
    static final int HOLDING = 1;
    static final int RECEIVING = 2;
  }

  /** The source chosen for a node and up to three others to resume from. */
  record Pick(Row source, List<Row> alsoAt) {}

  /** One upload the entity pointed a node at. */
  private static final class Upload {
    final String source;
    final long lease;
    final long pointedAt;
    boolean announced;

    Upload(String source, long lease, long pointedAt) {
      this.source = source;
      this.lease = lease;
      this.pointedAt = pointedAt;
    }
  }

  private record Receiving(long downloadId, long since) {}

  private final Map<String, Receiving> receiving = new LinkedHashMap<>();
  private final Map<String, Upload> uploads = new HashMap<>();
  private long order;
  private long leases;

  /** {@code node}'s copy has its headers and can be read as download {@code downloadId}. */
  void copying(String node, long downloadId) {
    Receiving before = receiving.get(node);
    receiving.put(node, new Receiving(downloadId, before != null ? before.since : ++order));
    Upload u = uploads.get(node);
    if (u != null) {
      u.announced = true;
    }
  }

  /** {@code node}'s copy ended (committed or not): its upload ends, and its row stops receiving. */
  void ended(String node) {
    uploads.remove(node);
    receiving.remove(node);
  }

  /** {@code node} no longer serves anything (it dropped its copy, or left). */
  void dropped(String node) {
    receiving.remove(node);
  }

  /** Forgets the receiving rows (a new fetch: the bytes being copied may not be the next ones). */
  void newFetch() {
    receiving.clear();
  }

  /**
   * Whether an upload the entity pointed a node at has not ended: the entity does not passivate
   * meanwhile (each ends, at the latest, when its lease runs out). Receiving rows do not count: a
   * node that crashed mid-copy never ends its row.
   */
  boolean uploading() {
    return !uploads.isEmpty();
  }

  /** The nodes still receiving, as rows, in the order their copies began. */
  List<Row> receiving() {
    List<Row> out = new ArrayList<>(receiving.size());
    receiving.forEach((node, r) -> out.add(new Row(node, r.downloadId, Row.RECEIVING, r.since)));
    return out;
  }

  /** Uploads pointed at {@code node} that have not ended. */
  int load(String node) {
    int n = 0;
    for (Upload u : uploads.values()) {
      if (u.source.equals(node)) {
        n++;
      }
    }
    return n;
  }

  /**
   * Until when (ticker nanos) some node pointed at a source is still taken to be on its way to
   * announcing its copy: one that has neither announced nor ended it counts for {@code patience}
   * after it was pointed (a lost {@code Copying} must not hold the waiting nodes until the lease
   * runs out). {@code Long.MIN_VALUE} when none is.
   */
  long copiesOnTheirWayUntil(long patience) {
    long until = Long.MIN_VALUE;
    for (Upload u : uploads.values()) {
      if (!u.announced) {
        until = Math.max(until, u.pointedAt + patience);
      }
    }
    return until;
  }

  /**
   * The least-loaded of {@code candidates} under {@code cap} for {@code requester} (never itself),
   * with up to three others to resume from (the entity's own node last among them), or null when
   * none has a free slot.
   */
  Pick pick(List<Row> candidates, String requester, int cap) {
    Map<String, Integer> loads = loads();
    List<Row> sorted = sorted(candidates, requester, loads);
    Row chosen = null;
    for (Row r : sorted) {
      if (loads.getOrDefault(r.peerUrl(), 0) < cap) {
        chosen = r;
        break;
      }
    }
    if (chosen == null) {
      return null;
    }
    return new Pick(chosen, others(sorted, chosen));
  }

  /** A pick of {@code owner} whatever its load (past the wait bound), with others to resume from. */
  Pick owner(List<Row> candidates, Row owner, String requester) {
    return new Pick(owner, others(sorted(candidates, requester, loads()), owner));
  }

  /** The uploads pointed at each source, counted once for a whole pick. */
  private Map<String, Integer> loads() {
    Map<String, Integer> loads = new HashMap<>();
    for (Upload u : uploads.values()) {
      loads.merge(u.source, 1, Integer::sum);
    }
    return loads;
  }

  /** The candidates but the requester: least-loaded first, then by rank, then oldest. */
  private static List<Row> sorted(List<Row> candidates, String requester, Map<String, Integer> loads) {
    return candidates.stream().filter(r -> !r.peerUrl().equals(requester))
        .sorted(Comparator.<Row>comparingInt(r -> loads.getOrDefault(r.peerUrl(), 0))
            .thenComparingInt(Row::rank).thenComparingLong(Row::since))
        .toList();
  }

  private static List<Row> others(List<Row> sorted, Row chosen) {
    List<Row> out = new ArrayList<>(3);
    Row owner = null;
    for (Row r : sorted) {
      if (r.peerUrl().equals(chosen.peerUrl())) {
        continue;
      }
      if (r.rank() == Row.OWNER) {
        owner = r;
      } else if (out.size() < 2) {
        out.add(r);
      }
    }
    if (owner != null) {
      out.add(owner);
    }
    return out;
  }

  /** The entity points {@code requester} at {@code source} at {@code now}: one upload more; returns its lease. */
  long point(String requester, String source, long now) {
    long lease = ++leases;
    uploads.put(requester, new Upload(source, lease, now));
    return lease;
  }

  /** The lease of {@code requester}'s upload ran out: true when it was still open (now released). */
  boolean expired(String requester, long lease) {
    Upload u = uploads.get(requester);
    if (u == null || u.lease != lease) {
      return false;
    }
    uploads.remove(requester);
    return true;
  }
}
