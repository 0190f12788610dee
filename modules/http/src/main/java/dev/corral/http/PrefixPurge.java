package dev.corral.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.Node;
import dev.corral.core.store.KeyPrefix;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.sharding.typed.javadsl.ClusterSharding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A purge by prefix, cluster-wide ({@code DELETE /-/admin/cache?repo=&prefix=}): this node and
 * every other node listed in the replica directory delete their copies of the matching keys and
 * say which keys they held; then each such key's entity ({@link FetchEntity.PurgeAll}) writes its
 * tombstone (so a node that is down now drops its copy when it starts: {@code holdersDown} counts
 * the holders the entity could not ask) and tells any holder that took a copy meanwhile to drop
 * it. A node that is listed but does not answer keeps its copies of keys no other node held, and a
 * key whose record could not be read has no tombstone: the answer names them and is a 503, and the
 * purge can be run again.
 */
final class PrefixPurge {
  private static final Logger log = LoggerFactory.getLogger(PrefixPurge.class);
  private static final ObjectMapper JSON = new ObjectMapper();
  /** Keys whose entities are asked at once. */
  static final int PARALLEL_KEYS = 32;
  /** How long another node may take to delete its copies and answer. */
  static final long NODE_TIMEOUT_SECONDS = 120;

  private final ActorSystem<?> system;
  private final Node node;

  PrefixPurge(ActorSystem<?> system, Node node) {
    this.system = system;
    this.node = node;
  }

  /** What one purge by prefix did. */
  record Result(KeyPrefix prefix, int keys, int copies, List<String> unreachableNodes, int recordsUnreachable,
      int holdersDown, int fetchesRunning) {
    boolean complete() {
      return unreachableNodes.isEmpty() && recordsUnreachable == 0;
    }

    HttpResponse response() {
      Map<String, Object> body = new LinkedHashMap<>();
      body.put("repo", prefix.repo());
      body.put("prefix", prefix.urlPrefix());
      body.put("keys", keys);
      body.put("copies", copies);
      body.put("unreachableNodes", unreachableNodes);
      body.put("recordsUnreachable", recordsUnreachable);
      body.put("holdersDown", holdersDown);
      body.put("fetchesRunning", fetchesRunning);
      if (!complete()) {
        body.put("error", "incomplete: the copies on the unreachable nodes (and of keys whose record could not be"
            + " read) were not purged; run the purge again");
      }
      try {
        return HttpResponse.create().withStatus(complete() ? 200 : 503).withEntity(
            HttpEntities.create(ContentTypes.APPLICATION_JSON, JSON.writeValueAsBytes(body)));
      } catch (JsonProcessingException e) {
        return Answers.text(500, "could not write the answer");
      }
    }
  }

  CompletionStage<Result> run(KeyPrefix prefix) {
    CompletableFuture<List<String>> here = CompletableFuture.supplyAsync(() -> {
      try {
        return prefix.dropFrom(node.store());
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }, node.io());
    List<String> others = node.peers().others();
    List<CompletableFuture<List<String>>> asked = others.stream()
        .map(n -> node.peers().dropMatching(n, prefix).toCompletableFuture()
            .orTimeout(NODE_TIMEOUT_SECONDS, TimeUnit.SECONDS)
            .exceptionally(e -> {
              log.warn("purge of {} {}: node {} could not be asked: {}", prefix.repo(), prefix.urlPrefix(), n,
                  e.toString());
              return null;
            }))
        .toList();
    List<CompletableFuture<?>> all = new ArrayList<>(asked);
    all.add(here);
    return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenCompose(v -> {
      Set<String> keys = new TreeSet<>(here.join());
      int copies = here.join().size();
      List<String> unreachable = new ArrayList<>();
      for (int i = 0; i < others.size(); i++) {
        List<String> dropped = asked.get(i).join();
        if (dropped == null) {
          unreachable.add(others.get(i));
        } else {
          keys.addAll(dropped);
          copies += dropped.size();
        }
      }
      int dropped = copies;
      return tombstones(new ArrayList<>(keys), 0, new int[4])
          .thenApply(t -> new Result(prefix, keys.size(), dropped + t[0], List.copyOf(unreachable), t[1], t[2], t[3]));
    });
  }

  /** Asks the entities of {@code ids[from..]}, {@link #PARALLEL_KEYS} at a time; tally: copies, records not read, holders that could not be asked, fetches running. */
  private CompletionStage<int[]> tombstones(List<String> ids, int from, int[] tally) {
    if (from >= ids.size()) {
      return CompletableFuture.completedFuture(tally);
    }
    String self = node.peers().self().orElse(null);
    List<CompletableFuture<FetchEntity.Purged>> batch = new ArrayList<>();
    for (String id : ids.subList(from, Math.min(ids.size(), from + PARALLEL_KEYS))) {
      batch.add(ClusterSharding.get(system).entityRefFor(FetchEntity.TYPE_KEY, id)
          .<FetchEntity.Purged>ask(replyTo -> new FetchEntity.PurgeAll(self, replyTo), AdminRoutes.PURGE_TIMEOUT)
          .toCompletableFuture()
          .exceptionally(e -> null));
    }
    return CompletableFuture.allOf(batch.toArray(CompletableFuture[]::new)).thenCompose(v -> {
      for (CompletableFuture<FetchEntity.Purged> b : batch) {
        FetchEntity.Purged p = b.join();
        if (p == null || !p.recordRead()) {
          tally[1]++;
        } else {
          tally[0] += p.copies();
          tally[2] += p.unreachable();
        }
        if (p != null && p.fetchRunning()) {
          tally[3]++;
        }
      }
      return tombstones(ids, from + PARALLEL_KEYS, tally);
    });
  }
}
