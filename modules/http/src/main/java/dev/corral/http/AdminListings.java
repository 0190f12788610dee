package dev.corral.http;

import static dev.corral.http.Answers.text;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.fetch.Peers;
import dev.corral.core.record.KeyRecords;
import dev.corral.core.record.Record;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.KeyPrefix;
import dev.corral.core.store.StoredArtifact;
import dev.corral.http.upstream.QuerylessUrl;
import dev.corral.registry.Repository;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;

/**
 * What this node holds, as the admin API lists it (JSON; the admin token is checked by
 * {@link AdminRoutes}):
 *
 * <ul>
 *   <li>{@code GET /-/admin/repos}: every repository: name, type, upstream URL (configured URLs
 *       carry no credentials), and the keys and bytes this node's store holds for it.
 *   <li>{@code GET /-/admin/keys?repo=R[&prefix=P][&limit=N][&after=CURSOR]}: the keys this node
 *       holds for R whose upstream URL starts with P (the whole URL, or the path after the
 *       repository's upstream URL), ordered by URL, at most N (default 100, at most 1000) a page,
 *       each with its variant, expected digest, size, sha256, fetched time and age; {@code next}
 *       is the cursor of the following page, absent on the last.
 * </ul>
 *
 * A listing copies out the matching entries of the store's index (it never marks them used), so
 * one request costs a pass over every key held.
 */
final class AdminListings {
  static final int DEFAULT_LIMIT = 100;
  static final int MAX_LIMIT = 1000;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final Map<String, Repository> repos;
  private final ArtifactStore store;
  private final Clock clock;
  private final KeyRecords records;
  private final Peers peers;

  /**
   * @param records where each listed key's holders are read, when {@code peers} names this node
   *     (a node that serves no other node lists no holders: it is the only one)
   */
  AdminListings(Map<String, Repository> repos, ArtifactStore store, Clock clock, KeyRecords records, Peers peers) {
    this.repos = new TreeMap<>(repos);
    this.store = store;
    this.clock = clock;
    this.records = records;
    this.peers = peers;
  }

  private static final String PERSISTENCE_PREFIX = FetchEntity.TYPE_KEY.name() + "|";
  /** How long the holders' read of one page may take before the page is answered without them. */
  static final Duration RECORD_READ_TIMEOUT = Duration.ofSeconds(3);

  /** A key as its stored record spells it ({@code ArtifactKey.canonical()}). */
  private record Listed(String repo, String url, String variant, String expected, StoredArtifact stored) {
    static Listed of(StoredArtifact a) {
      String[] parts = a.key().split("\n", 4);
      return new Listed(parts[0], parts.length > 1 ? parts[1] : "", parts.length > 2 ? parts[2] : "",
          parts.length > 3 ? parts[3] : "", a);
    }

    /** Where the listing's order puts it: by URL, then by key id for keys of one URL. */
    String position() {
      return url + '\u0000' + stored.keyId();
    }
  }

  /** A listing asked for while the store's index loads (after a start): it would wait for it. */
  private static HttpResponse stillLoading() {
    return text(503, "the store's index is still loading after the start; try again shortly")
        .addHeader(org.apache.pekko.http.javadsl.model.headers.RetryAfter.create(5L));
  }

  HttpResponse repos() {
    if (store.indexLoading()) {
      return stillLoading();
    }
    Map<String, long[]> held = new HashMap<>(); // repo -> {keys, bytes}
    for (StoredArtifact a : store.matching(a -> true)) {
      long[] tally = held.computeIfAbsent(Listed.of(a).repo(), r -> new long[2]);
      tally[0]++;
      tally[1] += a.size();
    }
    List<Map<String, Object>> out = new ArrayList<>();
    for (Repository r : repos.values()) {
      long[] tally = held.getOrDefault(r.name(), new long[2]);
      Map<String, Object> repo = new LinkedHashMap<>();
      repo.put("name", r.name());
      repo.put("type", r.type());
      repo.put("upstream", r.upstream());
      repo.put("keys", tally[0]);
      repo.put("bytes", tally[1]);
      out.add(repo);
    }
    return json(Map.of("repos", out));
  }

  CompletionStage<HttpResponse> keys(Optional<String> repoName, Optional<String> prefix, Optional<String> limitText,
      Optional<String> after) {
    if (store.indexLoading()) {
      return CompletableFuture.completedFuture(stillLoading());
    }
    Object page = page(repoName, prefix, limitText, after);
    if (page instanceof HttpResponse refused) {
      return CompletableFuture.completedFuture(refused);
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> body = (Map<String, Object>) page;
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> keys = (List<Map<String, Object>>) body.get("keys");
    if (peers.self().isEmpty() || keys.isEmpty()) {
      keys.forEach(k -> k.remove("id"));
      return CompletableFuture.completedFuture(json(body));
    }
    // Which nodes hold each key is in its record (the database), read for the listed keys only.
    List<CompletableFuture<Void>> reads = new ArrayList<>();
    for (Map<String, Object> key : keys) {
      String keyId = (String) key.remove("id");
      reads.add(records.read(PERSISTENCE_PREFIX + keyId).toCompletableFuture()
          .orTimeout(RECORD_READ_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
          .handle((got, e) -> {
            if (e != null) {
              body.put("holdersMissing", true);
            } else {
              key.put("holders", got.value().map(Record::holders).orElse(List.of()));
            }
            return null;
          }));
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new)).thenApply(v -> json(body));
  }

  /** The listing's body (its keys each with an {@code id} for the holders' read), or the refusal. */
  private Object page(Optional<String> repoName, Optional<String> prefix, Optional<String> limitText,
      Optional<String> after) {
    if (repoName.isEmpty() || !repos.containsKey(repoName.get())) {
      return text(repoName.isEmpty() ? 400 : 404,
          repoName.isEmpty() ? "keys: repo=NAME is required" : "unknown repository: " + repoName.get());
    }
    int limit;
    try {
      limit = limitText.map(Integer::parseInt).orElse(DEFAULT_LIMIT);
    } catch (NumberFormatException e) {
      return text(400, "keys: limit must be a number from 1 to " + MAX_LIMIT);
    }
    if (limit < 1 || limit > MAX_LIMIT) {
      return text(400, "keys: limit must be a number from 1 to " + MAX_LIMIT);
    }
    Optional<String> from;
    try {
      from = after.map(c -> new String(Base64.getUrlDecoder().decode(c), StandardCharsets.UTF_8));
    } catch (IllegalArgumentException e) {
      return text(400, "keys: after must be a cursor this API gave");
    }
    Repository repo = repos.get(repoName.get());
    KeyPrefix matched;
    try {
      matched = keyPrefix(repo, prefix);
    } catch (IllegalArgumentException e) {
      return text(400, "keys: " + e.getMessage());
    }
    String urlPrefix = matched.urlPrefix();
    List<Listed> page = new ArrayList<>();
    for (StoredArtifact a : store.matching(matched::matches)) {
      Listed l = Listed.of(a);
      if (from.isEmpty() || l.position().compareTo(from.get()) > 0) {
        page.add(l);
      }
    }
    page.sort(Comparator.comparing(Listed::position));
    boolean more = page.size() > limit;
    List<Listed> shown = more ? page.subList(0, limit) : page;
    long now = clock.millis();
    List<Map<String, Object>> keys = new ArrayList<>();
    for (Listed l : shown) {
      Map<String, Object> key = new LinkedHashMap<>();
      key.put("id", l.stored().keyId());
      key.put("url", QuerylessUrl.of(l.url())); // a query may carry a pre-signed URL's signature
      key.put("variant", l.variant());
      key.put("expected", l.expected());
      key.put("size", l.stored().size());
      key.put("sha256", l.stored().sha256());
      key.put("fetched", Instant.ofEpochMilli(l.stored().fetchedAtMillis()).toString());
      key.put("ageSeconds", Math.max(0, (now - l.stored().fetchedAtMillis()) / 1000));
      keys.add(key);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("repo", repo.name());
    body.put("prefix", urlPrefix);
    body.put("keys", keys);
    if (more) {
      body.put("next", Base64.getUrlEncoder().withoutPadding()
          .encodeToString(shown.get(shown.size() - 1).position().getBytes(StandardCharsets.UTF_8)));
    }
    return body;
  }


  /**
   * The keys of {@code repo} a {@code prefix} parameter names: the whole upstream URL, or the path
   * after the repository's upstream URL; every key of the repository when absent.
   */
  static KeyPrefix keyPrefix(Repository repo, Optional<String> prefix) {
    return new KeyPrefix(repo.name(), prefix.map(p -> p.startsWith("http://") || p.startsWith("https://") ? p
        : repo.upstream() + (p.startsWith("/") ? p : "/" + p)).orElse(""));
  }

  private static HttpResponse json(Object body) {
    try {
      return HttpResponse.create().withStatus(StatusCodes.OK)
          .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, JSON.writeValueAsBytes(body)));
    } catch (JsonProcessingException e) {
      return text(500, "could not write the listing");
    }
  }
}
