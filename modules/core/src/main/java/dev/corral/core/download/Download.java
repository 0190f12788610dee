package dev.corral.core.download;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.key.Digest;
import dev.corral.core.store.BlobWriter;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.CacheDirectives;
import dev.corral.core.upstream.Header;
import dev.corral.core.upstream.Upstream;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.ActorAttributes;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SharedKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one upstream download of a key: request, hash while streaming into a new blob, verify,
 * commit to the store, and say how it ended. It never throws: every failure, including a bug in
 * this code, ends as an {@link Outcome.Failed} (SEMANTICS W4).
 */
public final class Download {
  private static final Logger log = LoggerFactory.getLogger(Download.class);

  /**
   * Response headers worth keeping with the stored copy: those replayed to clients, and
   * {@code Date}, which is not replayed but gives an {@code Expires} its lifetime
   * ({@link CacheDirectives}).
   */
  private static final Set<String> KEPT_HEADERS =
      Set.of("content-type", "etag", "last-modified", "cache-control", "content-disposition",
          "expires", "content-language", "docker-content-digest", "date");

  /**
   * Put by Corral in the headers of a body it answers without storing it (the upstream said
   * {@code no-store} or {@code private} of a key that honours it): another node told of it does
   * not keep a replica, and a copy of it is not stored either. Never kept from an upstream
   * ({@link #KEPT_HEADERS}), never replayed to clients.
   */
  public static final Header NOT_STORED = new Header("X-Corral-Not-Stored", "no-store");

  /**
   * How long the finished file of a large body that was not stored stays readable by the waiters
   * told to stream it before it is deleted.
   */
  static final java.time.Duration NOT_STORED_GRACE = java.time.Duration.ofMinutes(1);

  /**
   * How long a large download that committed stays findable by its id (issue 17): another node
   * told to read it, or to resume its copy from it ({@code FromPeer.alsoAt}), may ask only after it
   * ended, and then reads the committed bytes rather than a 404 that would fail its copy.
   */
  static final java.time.Duration ENDED_GRACE = java.time.Duration.ofMinutes(1);

  /** Whether {@code headers} carry {@link #NOT_STORED}. */
  public static boolean saysNotStored(List<Header> headers) {
    for (Header h : headers) {
      if (h.name().equalsIgnoreCase(NOT_STORED.name())) {
        return true;
      }
    }
    return false;
  }

  private final Downloads node; // the node's store, hot blobs, upstream and running downloads
  private final ArtifactKey key;
  private final long inlineLimit;
  private final ActorSystem<?> system;
  private final SharedKillSwitch kill;
  private final long downloadId;
  /** The stored copy this fetch revalidates (a conditional GET), or null for a plain fetch. */
  private final StoredArtifact revalidating;
  /** A body the upstream says no-store or private of is answered, not stored (a generic key). */
  private final boolean honourNoStore;

  /** Validators a 304 may update in the stored copy's headers (RFC 9111 4.3.4). */
  private static final Set<String> REFRESHED_BY_304 =
      Set.of("etag", "last-modified", "cache-control", "expires", "date");

  private final Origin origin;
  /**
   * The digest the bytes must have: the key's own, or what {@link FetchSources} said before the
   * upstream was asked (K1, B1). Written before the request starts, read after its response.
   */
  private volatile Digest expected;
  /** The upstream URL the bytes came from, when not the key's own (logged, without its query). */
  private volatile String fetchedFrom;
  /** The status and headers of the answer that gives the bytes are known (W3). */
  private volatile boolean begun;

  /**
   * Where the bytes come from: {@code source} when it is given (other nodes' copy, see
   * {@link dev.corral.core.fetch.Peers#copy}), then the upstream if {@code thenUpstream}. The
   * source's bytes must hash to {@code sha256} when it is known, and are stored with
   * {@code headers} (the holder's record), not with the source's own, and as old as the holder's
   * copy ({@code fetchedAtMillis}; -1: as fetched now).
   */
  public record Origin(Upstream source, String sha256, List<Header> headers, boolean thenUpstream,
      long fetchedAtMillis) {
    public static final Origin UPSTREAM = new Origin(null, null, null, true, -1);
  }

  /** The source (other nodes) did not give the bytes. */
  private static final class PeerUnavailable extends IOException {
    PeerUnavailable(String message) {
      super(message);
    }
  }

  private Download(Downloads node, ArtifactKey key, long inlineLimit, StoredArtifact revalidating,
      boolean honourNoStore, ActorSystem<?> system, Origin origin) {
    this.node = node;
    this.honourNoStore = honourNoStore;
    this.key = key;
    this.inlineLimit = inlineLimit;
    this.revalidating = revalidating;
    this.system = system;
    this.origin = origin;
    this.expected = key.expected();
    this.downloadId = node.nextId();
    this.kill = KillSwitches.shared("fetch-" + downloadId);
  }

  /**
   * Starts a download of {@code key} from {@code origin}; a conditional GET with the validators
   * of {@code revalidating} when it is given (a 304 refreshes it in the store as
   * {@link Outcome.Revalidated}, a 200 replaces it, a 404/410 removes it).
   *
   * @param inlineLimit bodies up to this size are kept whole in memory and answered once verified
   * @param honourNoStore a body the upstream says {@code no-store} or {@code private} of is
   *     answered to the waiters and not stored ({@link Outcome#notStored}); a copy whose headers
   *     carry {@link #NOT_STORED} is never stored either way
   * @param onStreaming called (from any thread) when a large body's headers are known and waiters
   *     may start streaming it
   * @param onDone called once, with how the download ended; never with an exception
   */
  static Download start(Downloads node, ArtifactKey key, long inlineLimit, StoredArtifact revalidating,
      boolean honourNoStore, ActorSystem<?> system, Origin origin, Consumer<Outcome.Streaming> onStreaming,
      Consumer<Outcome> onDone) {
    Download fetch = new Download(node, key, inlineLimit, revalidating, honourNoStore, system, origin);
    CompletionStage<Outcome> done;
    try {
      done = fetch.run(onStreaming);
    } catch (Throwable e) {
      // Any throwable, as CompletableFuture treats one thrown in a callback: an Error thrown here
      // (an assert in an upstream client) would otherwise crash the entity mid-fetch (W4).
      done = CompletableFuture.failedFuture(e);
    }
    done.handle((outcome, error) -> error == null ? outcome : fetch.failure(error))
        .thenAccept(onDone);
    return fetch;
  }

  /**
   * Whether the outcome has begun: the status and headers of the answer are known, though its
   * body may still be arriving (SEMANTICS W3: a waiter's budget stops here; a slow body is then
   * bounded by the upstream's idle timeout, not by the budget).
   */
  public boolean begun() {
    return begun;
  }

  /** Aborts the download (the entity stopped, or nobody waits and no orphan slot is free). */
  public void abort(String reason) {
    kill.abort(new IOException("fetch aborted: " + reason));
  }

  private CompletionStage<Outcome> run(Consumer<Outcome.Streaming> onStreaming) {
    if (origin.source() == null) {
      return fromUpstream(onStreaming);
    }
    CompletionStage<UpstreamResponse> asked;
    try {
      asked = origin.source().get(new UpstreamRequest(key.repo(), key.url(), List.of()));
    } catch (RuntimeException e) {
      asked = CompletableFuture.failedFuture(e);
    }
    return asked
        .handle((response, error) -> {
          if (error == null && response.status() == 200 && response.contentLength().isPresent()) {
            return onResponse(response, origin.sha256(), origin.headers(), onStreaming);
          }
          if (response != null) {
            response.body().runWith(Sink.cancelled(), system);
          }
          String why = error != null ? unwrap(error).toString() : "status " + response.status();
          if (!origin.thenUpstream()) {
            return CompletableFuture.<Outcome>failedFuture(new PeerUnavailable("no other node gave " + key + ": " + why));
          }
          log.info("no other node gave {} ({}); fetching it upstream", key, why);
          return fromUpstream(onStreaming);
        })
        .thenCompose(next -> next);
  }

  private CompletionStage<Outcome> fromUpstream(Consumer<Outcome.Streaming> onStreaming) {
    CompletionStage<FetchSource> source;
    try {
      source = node.sources().of(key);
    } catch (RuntimeException e) {
      source = CompletableFuture.failedFuture(e);
    }
    return source
        .exceptionally(e -> {
          Throwable t = unwrap(e);
          throw new CompletionException(t instanceof FetchSources.Unavailable ? t
              : new FetchSources.Unavailable(t.toString(), t instanceof java.util.concurrent.TimeoutException));
        })
        .thenCompose(s -> {
          if (key.expected() == null) {
            expected = s.expected(); // a digest the key names is never replaced
          }
          if (!s.url().equals(key.url())) {
            int query = s.url().indexOf('?');
            fetchedFrom = query < 0 ? s.url() : s.url().substring(0, query);
          }
          return node.upstream().get(new UpstreamRequest(key.repo(), s.url(), requestHeaders()));
        })
        .thenCompose(response -> onResponse(response, null, null, onStreaming));
  }

  /** The variant's Accept header (K1: the variant is what Corral asks for) and any validators. */
  private List<Header> requestHeaders() {
    List<Header> headers = new ArrayList<>(2);
    if (!key.variant().isEmpty()) {
      headers.add(new Header("Accept", key.variant()));
    }
    if (revalidating != null) {
      header(revalidating.headers(), "etag").ifPresent(v -> headers.add(new Header("If-None-Match", v)));
      header(revalidating.headers(), "last-modified").ifPresent(v -> headers.add(new Header("If-Modified-Since", v)));
    }
    return headers;
  }

  private static Optional<String> header(List<Header> headers, String lowerCaseName) {
    return headers.stream()
        .filter(h -> h.name().toLowerCase(Locale.ROOT).equals(lowerCaseName))
        .map(Header::value)
        .findFirst();
  }

  private CompletionStage<Outcome> onResponse(UpstreamResponse response, String expectedSha256, List<Header> fixedHeaders,
      Consumer<Outcome.Streaming> onStreaming) {
    begun = true;
    int status = response.status();
    if (status == 404 || status == 410) {
      response.body().runWith(Sink.cancelled(), system);
      Outcome.NotFound notFound = new Outcome.NotFound(status == 410, kept(response.headers()));
      if (revalidating != null) {
        // The artifact is gone upstream: the stale copy must not be served again.
        return CompletableFuture.supplyAsync(() -> {
          try {
            node.store().remove(key);
          } catch (IOException e) {
            throw new CompletionException(e);
          }
          return notFound;
        }, node.io());
      }
      return CompletableFuture.completedFuture(notFound);
    }
    if (status == 304 && revalidating != null) {
      response.body().runWith(Sink.cancelled(), system);
      List<Header> headers = refreshed(revalidating.headers(), kept(response.headers()));
      return CompletableFuture.supplyAsync(() -> touch(headers), node.io());
    }
    if (status != 200) {
      response.body().runWith(Sink.cancelled(), system);
      return CompletableFuture.completedFuture(
          new Outcome.Failed(Failure.UPSTREAM_ERROR, "upstream answered " + status));
    }
    List<Header> headers = fixedHeaders != null ? fixedHeaders : kept(response.headers());
    // Known before the body: a no-store body is written to a temporary file only (it is hashed,
    // and a large one streams to its waiters from there), which is deleted when it ends.
    final boolean store = !saysNotStored(headers)
        && !(honourNoStore && CacheDirectives.of(headers, node.clock().millis()).noStore());
    if (!store && !saysNotStored(headers)) {
      List<Header> marked = new ArrayList<>(headers);
      marked.add(NOT_STORED);
      headers = List.copyOf(marked);
    }
    final List<Header> answered = headers;
    long length = response.contentLength().orElse(-1);
    BlobWriter opened = null;
    GrowingBlob growing = null;
    try {
      opened = node.store().newBlob(expected == null ? null : expected.jcaName());
      if (length > inlineLimit) {
        growing = new GrowingBlob(opened.tempFile(), length, node.io());
        node.put(downloadId, growing);
      }
    } catch (IOException e) {
      response.body().runWith(Sink.cancelled(), system);
      if (opened != null) {
        opened.close(); // no temp file left behind
      }
      return CompletableFuture.failedFuture(e);
    }
    final BlobWriter writer = opened;
    if (growing != null) {
      onStreaming.accept(new Outcome.Streaming(answered, length, downloadId));
    }
    final GrowingBlob stream = growing;
    // Small bodies (and bodies of unknown length up to the inline limit) are kept in memory too,
    // so that every waiter shares one immutable ByteString.
    final ByteStringBuilder memory = stream == null ? ByteString.createBuilder() : null;
    final long[] seen = {0};
    // The writes are blocking file I/O: the whole stream runs on the blocking-io dispatcher.
    CompletionStage<Done> written =
        response.body()
            .via(kill.flow())
            .toMat(
                Sink.foreach(bytes -> {
                  writer.write(bytes);
                  seen[0] += bytes.size();
                  if (stream != null) {
                    stream.advance(writer.written());
                  } else if (seen[0] <= inlineLimit) {
                    memory.append(bytes);
                  }
                }),
                Keep.right())
            .withAttributes(ActorAttributes.dispatcher("pekko.actor.default-blocking-io-dispatcher"))
            .run(system);
    return written
        .thenApplyAsync(done -> store
                ? commit(writer, length, answered, stream, memory, seen[0] <= inlineLimit, expectedSha256)
                : passOn(writer, length, answered, stream, memory, seen[0] <= inlineLimit, expectedSha256),
            node.io())
        .whenComplete((outcome, error) -> {
          if (error != null) {
            writer.close();
            if (stream != null) {
              stream.fail(unwrap(error));
            }
          }
          if (outcome instanceof Outcome.PassedThrough) {
            // Waiters told to stream it may not have begun reading yet (another node's copy
            // starts with a request to this one): the finished file stays readable for a while,
            // then goes.
            system.scheduler().scheduleOnce(NOT_STORED_GRACE, () -> {
              node.remove(downloadId);
              writer.close();
            }, system.executionContext());
          } else if (stream != null && outcome instanceof Outcome.Stored) {
            // Late readers read the committed bytes (GrowingBlob.complete).
            system.scheduler().scheduleOnce(ENDED_GRACE, () -> node.remove(downloadId), system.executionContext());
          } else {
            node.remove(downloadId);
          }
        });
  }

  private Outcome commit(BlobWriter writer, long length, List<Header> headers, GrowingBlob stream,
      ByteStringBuilder memory, boolean fitsInline, String expectedSha256) {
    try {
      writer.seal(); // the store's commit makes it durable
      if (length >= 0 && writer.written() != length) {
        throw new IOException("upstream body ended at " + writer.written() + " of " + length + " bytes");
      }
      String mismatch = mismatch(writer, expectedSha256);
      if (mismatch != null) {
        writer.close();
        if (stream != null) {
          stream.fail(new IOException("digest mismatch"));
        }
        return new Outcome.Failed(Failure.BAD_BYTES, mismatch);
      }
      // A copy of another node's bytes keeps their age from the moment it is committed: mutable
      // metadata must never look fresh, not even between a commit and a correction of its time.
      StoredArtifact artifact = node.store().commit(key, writer, headers,
          expectedSha256 != null && origin.fetchedAtMillis() >= 0 ? origin.fetchedAtMillis() : -1);
      if (stream != null) {
        stream.complete(() -> node.store().read(artifact, 0, artifact.size()));
        return new Outcome.Stored(artifact);
      }
      if (fitsInline) {
        ByteString bytes = memory.result().compact();
        node.hot().put(artifact.sha256(), bytes); // verified: hashed as it arrived
        return new Outcome.Body(headers, bytes, artifact);
      }
      return new Outcome.Stored(artifact);
    } catch (IOException e) {
      throw new CompletionException(e);
    }
  }

  /**
   * A body that must not be stored: verified as {@link #commit} verifies it, answered, and its
   * temporary file deleted: a small one's at once, a large one's (that streamed to its waiters)
   * {@link #NOT_STORED_GRACE} later, so that a waiter told to stream it that starts reading only
   * after the download ended still reads it whole. A revalidated copy it replaces is removed: the
   * upstream no longer lets it be kept. A body of unknown length larger than the inline limit
   * cannot be answered without storing it: the waiters get a 502.
   */
  private Outcome passOn(BlobWriter writer, long length, List<Header> headers, GrowingBlob stream,
      ByteStringBuilder memory, boolean fitsInline, String expectedSha256) {
    boolean keepFile = false;
    try {
      writer.seal(); // never committed: never fsynced
      if (length >= 0 && writer.written() != length) {
        throw new IOException("upstream body ended at " + writer.written() + " of " + length + " bytes");
      }
      String mismatch = mismatch(writer, expectedSha256);
      if (mismatch != null) {
        if (stream != null) {
          stream.fail(new IOException("digest mismatch"));
        }
        return new Outcome.Failed(Failure.BAD_BYTES, mismatch);
      }
      if (revalidating != null) {
        node.store().remove(key);
      }
      if (stream != null) {
        java.nio.file.Path file = writer.tempFile();
        stream.complete(() -> org.apache.pekko.stream.javadsl.FileIO.fromPath(file)
            .mapMaterializedValue(m -> org.apache.pekko.NotUsed.getInstance()));
        keepFile = true; // deleted after the grace (see onResponse)
        return new Outcome.PassedThrough(headers, length);
      }
      if (fitsInline) {
        return new Outcome.Body(headers, memory.result().compact(), null);
      }
      log.warn("{} is no-store and of unknown length larger than the inline limit: it cannot be answered"
          + " without storing it", key);
      return new Outcome.Failed(Failure.UPSTREAM_ERROR,
          "the upstream's no-store body has no Content-Length and is larger than the inline limit");
    } catch (IOException e) {
      throw new CompletionException(e);
    } finally {
      if (!keepFile) {
        writer.close(); // never committed: the temporary file is deleted
      }
    }
  }

  /** Why the written bytes are not the expected ones (logged), or null when they are. */
  private String mismatch(BlobWriter writer, String expectedSha256) {
    if (expectedSha256 != null && !expectedSha256.equals(writer.sha256())) {
      log.warn("bytes of {} from a peer hash to sha256:{}, not the recorded {}; nothing stored",
          key, writer.sha256(), expectedSha256);
      return "a peer's copy does not match the recorded sha256";
    }
    Digest expected = this.expected;
    if (expected != null) {
      String actual = expected.algorithm().equals("sha256") ? writer.sha256() : writer.extraDigest();
      if (!expected.hex().equals(actual)) {
        log.warn("digest mismatch for {}{}: expected {} but the upstream's bytes hash to {}:{}; nothing stored",
            key, fetchedFrom == null ? "" : " (from " + fetchedFrom + ")", expected, expected.algorithm(), actual);
        return "upstream bytes do not match the expected " + expected.algorithm();
      }
    }
    return null;
  }

  /** A 304: the stored copy is current again from now. */
  private Outcome touch(List<Header> headers) {
    try {
      Optional<StoredArtifact> touched = node.store().touch(key, headers, node.clock().millis());
      // Empty when a commit or removal overtook this revalidation: serve what is there now.
      Optional<StoredArtifact> current = touched.isPresent() ? touched : node.store().lookup(key);
      return current.<Outcome>map(Outcome.Revalidated::new)
          .orElseGet(() -> new Outcome.Failed(Failure.INTERNAL, "the cached copy vanished while it was revalidated"));
    } catch (IOException e) {
      throw new CompletionException(e);
    }
  }

  /** The stored headers with the validators a 304 sent replacing theirs. */
  private static List<Header> refreshed(List<Header> stored, List<Header> fromNotModified) {
    Set<String> replaced = new HashSet<>();
    for (Header h : fromNotModified) {
      String name = h.name().toLowerCase(Locale.ROOT);
      if (REFRESHED_BY_304.contains(name)) {
        replaced.add(name);
      }
    }
    List<Header> out = new ArrayList<>();
    for (Header h : stored) {
      if (!replaced.contains(h.name().toLowerCase(Locale.ROOT))) {
        out.add(h);
      }
    }
    for (Header h : fromNotModified) {
      if (replaced.contains(h.name().toLowerCase(Locale.ROOT))) {
        out.add(h);
      }
    }
    return out;
  }

  /** Maps any failure to the answer waiters get. */
  private Outcome failure(Throwable error) {
    Throwable e = unwrap(error);
    if (e instanceof PeerUnavailable) {
      return new Outcome.Unavailable(e.getMessage());
    }
    if (e instanceof FetchSources.Unavailable u) {
      log.warn("fetch of {} failed: {}", key, u.getMessage());
      return new Outcome.Failed(u.isTimeout() ? Failure.UPSTREAM_TIMEOUT : Failure.UPSTREAM_ERROR, u.getMessage());
    }
    if (e instanceof UpstreamException u) {
      log.warn("fetch of {} failed: {}", key, u.getMessage());
      if (u.isQueueFull()) {
        return new Outcome.Failed(Failure.UPSTREAM_BUSY, "upstream busy: " + u.getMessage());
      }
      return u.isTimeout()
          ? new Outcome.Failed(Failure.UPSTREAM_TIMEOUT, "upstream timed out: " + u.getMessage())
          : new Outcome.Failed(Failure.UPSTREAM_ERROR, "upstream error: " + u.getMessage());
    }
    if (e instanceof IOException || e instanceof org.apache.pekko.stream.StreamTcpException
        || String.valueOf(e.getClass().getName()).contains("EntityStream")) {
      log.warn("fetch of {} failed: {}", key, e.toString());
      return new Outcome.Failed(Failure.UPSTREAM_ERROR, "upstream transfer failed: " + e.getMessage());
    }
    if (e instanceof java.util.concurrent.TimeoutException) {
      return new Outcome.Failed(Failure.UPSTREAM_TIMEOUT, "upstream timed out");
    }
    log.error("fetch of {} failed with an unexpected error", key, e);
    return new Outcome.Failed(Failure.INTERNAL, "internal error while fetching: " + e.getClass().getSimpleName());
  }

  private static Throwable unwrap(Throwable e) {
    while ((e instanceof CompletionException || e instanceof java.util.concurrent.ExecutionException)
        && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  private static List<Header> kept(List<Header> headers) {
    return headers.stream()
        .filter(h -> KEPT_HEADERS.contains(h.name().toLowerCase(Locale.ROOT)))
        .toList();
  }
}
