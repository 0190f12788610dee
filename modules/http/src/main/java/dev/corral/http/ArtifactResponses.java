package dev.corral.http;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.corral.core.download.GrowingBlob;
import dev.corral.core.fetch.Via;
import dev.corral.core.store.ArtifactStore;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.store.StoredArtifact;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.ContentType;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.ContentEncoding;
import org.apache.pekko.http.javadsl.model.headers.HttpEncodings;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * Turns an artifact (shared bytes, stored bytes or a download in progress) into the HTTP answer
 * for one request: upstream headers replayed, {@code X-Cache} set, conditional requests answered
 * with 304 and a single {@code Range} with 206, with an exact {@code Content-Length}.
 *
 * <p>Metadata (the callers pass the node's {@link RewrittenMetadata} as {@code forms}) is answered
 * gzip-encoded when the request takes it ({@link AcceptEncoding}) and asks no {@code Range}, and
 * its bytes are in memory: {@code Content-Encoding: gzip} and the gzip form's own ETag
 * ({@link GzipForm#etag}), made once per body and remembered. Every answer of metadata says
 * {@code Vary: Accept-Encoding}. Artifacts ({@code forms} null) are always sent as they are.
 */
final class ArtifactResponses {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(ArtifactResponses.class);
  /** Headers replayed to clients; Content-Type goes on the entity. */
  private static final List<String> REPLAYED =
      List.of("etag", "last-modified", "cache-control", "content-disposition", "expires", "content-language",
          "docker-content-digest");
  private static final HttpHeader ACCEPT_RANGES = RawHeader.create("Accept-Ranges", "bytes");
  /** On every answer of metadata that may be sent gzip-encoded, whichever form it is. */
  static final HttpHeader VARY_ENCODING = RawHeader.create("Vary", "Accept-Encoding");
  private static final HttpHeader GZIP = ContentEncoding.create(HttpEncodings.GZIP);
  private static final Map<Via, HttpHeader> X_CACHE = new EnumMap<>(Via.class);

  static {
    for (Via via : Via.values()) {
      X_CACHE.put(via, RawHeader.create("X-Cache", via.name()));
    }
  }

  /**
   * What every answer made from one list of upstream headers shares, built once per list: a
   * stored artifact keeps its list for as long as it is stored, so its hits parse no content
   * type and build no header. Keyed by the list's identity (weak keys), gone with it.
   */
  private record Prepared(ContentType type, List<HttpHeader> replayed, List<HttpHeader> replayedButEtag, String etag,
      String lastModified) {}

  private static final Cache<List<Header>, Prepared> PREPARED =
      Caffeine.newBuilder().weakKeys().maximumSize(10_000).build();

  private final ArtifactStore store;
  private final HotBlobs hot;
  private final Executor io;

  ArtifactResponses(ArtifactStore store, HotBlobs hot, Executor io) {
    this.store = store;
    this.hot = hot;
    this.io = io;
  }

  /** A complete body held in memory (shared by every waiter; sliced, never copied, for a range). */
  HttpResponse bytes(HttpRequest request, Via via, int status, List<Header> headers, ByteString body) {
    Prepared p = prepared(headers);
    Asked asked = Asked.of(request);
    return asked.notModified(request, p) ? base(via, p, 304) : body(request, via, status, p, asked, body);
  }

  /** The same once the request is known not to be answered 304. */
  private HttpResponse body(HttpRequest request, Via via, int status, Prepared p, Asked asked, ByteString body) {
    ByteRange range = asked.range(request, p, body.size());
    if (range instanceof ByteRange.Partial part) {
      return base(via, p, 206)
          .addHeader(RawHeader.create("Content-Range", part.contentRange(body.size())))
          .withEntity(HttpEntities.create(p.type(), body.slice((int) part.offset(), (int) (part.offset() + part.length()))));
    }
    if (range instanceof ByteRange.Unsatisfiable) {
      return unsatisfiable(via, p, body.size());
    }
    return base(via, p, status).withEntity(HttpEntities.create(p.type(), body));
  }

  /**
   * Small stored artifacts are read whole and their SHA-256 verified before they are served, then
   * kept in {@link HotBlobs} (up to 1 MiB each); with the memory cache off, up to this size. Larger
   * ones stream from disk in bounded memory, hashed as they stream: a whole body that does not
   * match is cut before its last byte and dropped from the store (F2; {@code DiskStore.read}). A
   * range of a large body is served unverified (docs/security.md).
   */
  static final long VERIFIED_READ_LIMIT = 64 * 1024;

  /**
   * Bytes from this node's store. Small artifacts are read whole and verified; large ones stream
   * in bounded memory, verified while they stream (a mismatch aborts the response). Completes with empty when the stored bytes turned out missing or corrupt
   * (the store has then forgotten the key, and the caller fetches it again).
   */
  CompletionStage<Optional<HttpResponse>> stored(HttpRequest request, Via via, StoredArtifact artifact) {
    return stored(request, via, artifact, null);
  }

  /**
   * The same for an artifact that may be metadata.
   *
   * @param forms the node's gzip forms when the artifact is metadata (gzip-encoded when the
   *     request takes it and its bytes are read whole; a larger body streams as identity); null
   *     for an artifact, always sent as it is
   */
  CompletionStage<Optional<HttpResponse>> stored(HttpRequest request, Via via, StoredArtifact artifact,
      RewrittenMetadata forms) {
    long size = artifact.size();
    Prepared p = prepared(artifact.headers());
    Asked asked = Asked.of(request);
    HttpResponse notModified = notModified(request, via, p, asked, artifact.sha256(), forms);
    if (notModified != null) {
      return CompletableFuture.completedFuture(Optional.of(notModified));
    }
    Optional<ByteString> inMemory = hot.get(artifact.sha256());
    if (inMemory.isPresent()) {
      return whole(request, via, p, asked, inMemory.get(), artifact.sha256(), forms).thenApply(Optional::of);
    }
    if (size <= VERIFIED_READ_LIMIT || hot.fits(size)) {
      return CompletableFuture.supplyAsync(() -> {
        try {
          ByteString verified = store.readAll(artifact);
          hot.put(artifact.sha256(), verified);
          return Optional.of(verified);
        } catch (IOException e) {
          log.warn("stored bytes of {} unusable, fetching again: {}", artifact.key(), e.toString());
          return Optional.<ByteString>empty();
        }
      }, io).thenCompose(read -> read.isEmpty() ? CompletableFuture.completedFuture(Optional.<HttpResponse>empty())
          : whole(request, via, p, asked, read.get(), artifact.sha256(), forms).thenApply(Optional::of));
    }
    ByteRange range = asked.range(request, p, size);
    HttpResponse response;
    if (range instanceof ByteRange.Partial part) {
      response = base(via, p, 206)
          .addHeader(RawHeader.create("Content-Range", part.contentRange(size)))
          .withEntity(HttpEntities.create(p.type(), part.length(), store.read(artifact, part.offset(), part.length())));
    } else if (range instanceof ByteRange.Unsatisfiable) {
      response = unsatisfiable(via, p, size);
    } else {
      response = base(via, p, 200).withEntity(HttpEntities.create(p.type(), size, store.read(artifact, 0, size)));
    }
    return CompletableFuture.completedFuture(Optional.of(forms == null ? response : response.addHeader(VARY_ENCODING)));
  }

  /**
   * A whole metadata body in memory, answered 200 (or 304, 206, 416): gzip-encoded when the request takes it (see the class
   * comment), else identity; both say {@code Vary: Accept-Encoding}. When the budget has no room
   * to make the gzip form now, identity is served.
   *
   * @param digest hex naming {@code body} (its SHA-256, or the hash in a rewritten body's ETag)
   * @param forms where gzip forms are made once and remembered
   */
  CompletionStage<HttpResponse> metadata(HttpRequest request, Via via, List<Header> headers, ByteString body,
      String digest, RewrittenMetadata forms) {
    Prepared p = prepared(headers);
    Asked asked = Asked.of(request);
    HttpResponse notModified = notModified(request, via, p, asked, digest, forms);
    return notModified != null ? CompletableFuture.completedFuture(notModified)
        : whole(request, via, p, asked, body, digest, forms);
  }

  /** 304 in the form the request would get (gzip or identity), or null when it is not answered 304. */
  private static HttpResponse notModified(HttpRequest request, Via via, Prepared p, Asked asked, String digest,
      RewrittenMetadata forms) {
    if (forms == null) {
      return asked.notModified(request, p) ? base(via, p, 304) : null;
    }
    if (asked.takesGzip()) {
      String etag = GzipForm.etag(p.etag(), digest);
      return asked.notModified(request, etag, p.lastModified()) ? gzipBase(via, p, etag, 304) : null;
    }
    return asked.notModified(request, p) ? base(via, p, 304).addHeader(VARY_ENCODING) : null;
  }

  /** A body in memory, once the request is known not to be answered 304. */
  private CompletionStage<HttpResponse> whole(HttpRequest request, Via via, Prepared p, Asked asked, ByteString body,
      String digest, RewrittenMetadata forms) {
    if (forms == null) {
      return CompletableFuture.completedFuture(body(request, via, 200, p, asked, body));
    }
    if (!asked.takesGzip()) {
      return CompletableFuture.completedFuture(body(request, via, 200, p, asked, body).addHeader(VARY_ENCODING));
    }
    return forms.gzipped(digest, p.etag(), body).handle((gz, e) -> {
      if (e != null) {
        log.debug("no gzip form now, identity served: {}", e.toString());
        return body(request, via, 200, p, asked, body).addHeader(VARY_ENCODING);
      }
      return gzipBase(via, p, gz.etag(), 200).addHeader(GZIP).withEntity(HttpEntities.create(p.type(), gz.body()));
    });
  }

  /**
   * The head of a gzip-encoded answer: the replayed headers with the gzip form's ETag for the
   * upstream's, and no {@code Accept-Ranges} (ranges are served on the identity form only).
   */
  private static HttpResponse gzipBase(Via via, Prepared p, String etag, int status) {
    return HttpResponse.create().withStatus(StatusCodes.get(status)).addHeader(X_CACHE.get(via))
        .addHeaders(p.replayedButEtag()).addHeader(RawHeader.create("ETag", etag)).addHeader(VARY_ENCODING);
  }

  /**
   * A large body still downloading, answered as soon as its status and headers are known: 304
   * when the request's {@code If-None-Match} / {@code If-Modified-Since} match them; for a single
   * {@code Range}, 206 with that part read from the growing download (bytes that have arrived
   * flow at once, later ones as they arrive, and the body's last byte only once verified, as for
   * a whole body, B2), 416 past the announced length; otherwise the whole body as it arrives.
   */
  HttpResponse streaming(HttpRequest request, Via via, int status, List<Header> headers, long length,
      GrowingBlob growing) {
    Prepared p = prepared(headers);
    Asked asked = Asked.of(request);
    if (asked.notModified(request, p)) {
      return base(via, p, 304);
    }
    ByteRange range = asked.range(request, p, length);
    if (range instanceof ByteRange.Partial part) {
      return base(via, p, 206)
          .addHeader(RawHeader.create("Content-Range", part.contentRange(length)))
          .withEntity(HttpEntities.create(p.type(), part.length(), part(growing.reader(part.offset()), part.length())));
    }
    if (range instanceof ByteRange.Unsatisfiable) {
      return unsatisfiable(via, p, length);
    }
    return base(via, p, status).withEntity(HttpEntities.create(p.type(), length, growing.reader()));
  }

  /** The first {@code length} bytes of {@code from}; ends (and lets go of the download) there. */
  static Source<ByteString, NotUsed> part(Source<ByteString, NotUsed> from, long length) {
    return Source.lazySource(() -> {
          long[] left = {length};
          return from
              .map(chunk -> {
                ByteString c = chunk.size() > left[0] ? chunk.take((int) left[0]) : chunk;
                left[0] -= c.size();
                return c;
              })
              .takeWhile(c -> left[0] > 0, true);
        })
        .mapMaterializedValue(m -> NotUsed.getInstance());
  }

  private HttpResponse unsatisfiable(Via via, Prepared p, long size) {
    return base(via, p, 416)
        .addHeader(RawHeader.create("Content-Range", "bytes */" + size))
        .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, "range not satisfiable\n"));
  }

  private static HttpResponse base(Via via, Prepared p, int status) {
    return HttpResponse.create().withStatus(StatusCodes.get(status))
        .addHeader(X_CACHE.get(via)).addHeader(ACCEPT_RANGES).addHeaders(p.replayed());
  }

  /**
   * The last lists asked for, one per place by identity hash, in front of {@link #PREPARED}: a hot
   * hit's weak-keyed cache lookup cost more than the rest of building its answer. Each place is
   * one immutable pair, so racing threads at worst replace each other's; at most 64 lists are
   * held here beyond their time.
   */
  private record Recent(List<Header> headers, Prepared prepared) {}

  private static final Recent[] RECENT = new Recent[64];

  private static Prepared prepared(List<Header> headers) {
    int place = System.identityHashCode(headers) & (RECENT.length - 1);
    Recent recent = RECENT[place];
    if (recent != null && recent.headers() == headers) {
      return recent.prepared();
    }
    Prepared p = PREPARED.get(headers, ArtifactResponses::prepare);
    RECENT[place] = new Recent(headers, p);
    return p;
  }

  private static Prepared prepare(List<Header> headers) {
    List<HttpHeader> replayed = new ArrayList<>();
    List<HttpHeader> butEtag = new ArrayList<>();
    for (Header h : headers) {
      String name = h.name().toLowerCase(Locale.ROOT);
      if (REPLAYED.contains(name)) {
        replayed.add(RawHeader.create(h.name(), h.value()));
        if (!name.equals("etag")) {
          butEtag.add(replayed.get(replayed.size() - 1));
        }
      }
    }
    return new Prepared(contentType(headers), List.copyOf(replayed), List.copyOf(butEtag), value(headers, "etag"),
        value(headers, "last-modified"));
  }

  /** The request headers an answer depends on, read in one pass. */
  private record Asked(String ifNoneMatch, String ifModifiedSince, String range, String ifRange,
      List<String> acceptEncoding) {
    static Asked of(HttpRequest request) {
      String ifNoneMatch = null;
      String ifModifiedSince = null;
      String range = null;
      String ifRange = null;
      List<String> acceptEncoding = List.of();
      for (HttpHeader h : request.getHeaders()) {
        switch (h.lowercaseName()) {
          case "if-none-match" -> ifNoneMatch = ifNoneMatch == null ? h.value() : ifNoneMatch;
          case "if-modified-since" -> ifModifiedSince = ifModifiedSince == null ? h.value() : ifModifiedSince;
          case "range" -> range = range == null ? h.value() : range;
          case "if-range" -> ifRange = ifRange == null ? h.value() : ifRange;
          case "accept-encoding" -> {
            acceptEncoding = acceptEncoding.isEmpty() ? new ArrayList<>(1) : acceptEncoding;
            acceptEncoding.add(h.value());
          }
          default -> { }
        }
      }
      return new Asked(ifNoneMatch, ifModifiedSince, range, ifRange, acceptEncoding);
    }

    boolean notModified(HttpRequest request, Prepared p) {
      return notModified(request, p.etag(), p.lastModified());
    }

    boolean notModified(HttpRequest request, String etag, String lastModified) {
      return (ifNoneMatch != null || ifModifiedSince != null)
          && Conditional.notModified(request.method().name(), etag, lastModified, ifNoneMatch, ifModifiedSince);
    }

    /**
     * The answer may be gzip-encoded: the request takes gzip and asks no range (a range of a gzip
     * answer would count encoded bytes; a request with {@code Range} gets identity).
     */
    boolean takesGzip() {
      return range == null && !acceptEncoding.isEmpty() && AcceptEncoding.gzip(acceptEncoding);
    }

    ByteRange range(HttpRequest request, Prepared p, long total) {
      return ByteRange.select(request.method().name(), range, ifRange, p.etag(), p.lastModified(), total);
    }
  }

  static ContentType contentType(List<Header> headers) {
    String v = value(headers, "content-type");
    if (v == null) {
      return ContentTypes.APPLICATION_OCTET_STREAM;
    }
    try {
      return ContentTypes.parse(v);
    } catch (RuntimeException e) {
      return ContentTypes.APPLICATION_OCTET_STREAM;
    }
  }

  static String value(List<Header> headers, String name) {
    for (Header h : headers) {
      if (h.name().equalsIgnoreCase(name)) {
        return h.value();
      }
    }
    return null;
  }

  /**
   * The repository's headers added to an answer; its {@code Vary} and the answer's own
   * ({@code Accept-Encoding}) become one line, {@code Vary: Accept, Accept-Encoding}, for caches
   * that read only one.
   */
  static HttpResponse withTargetHeaders(HttpResponse r, List<Header> headers) {
    // lower case: getHeader(String) makes a lower-cased copy of any other name, on every request
    Optional<HttpHeader> own = r.getHeader("vary");
    Optional<Header> theirs = headers.stream().filter(h -> h.name().equalsIgnoreCase("Vary")).findFirst();
    if (own.isEmpty() || theirs.isEmpty()) {
      return r.addHeaders(headers.stream().map(h -> (HttpHeader) RawHeader.create(h.name(), h.value())).toList());
    }
    List<Header> rest = headers.stream().filter(h -> h != theirs.get()).toList();
    return r.removeHeader("Vary").addHeader(RawHeader.create("Vary", theirs.get().value() + ", " + own.get().value()))
        .addHeaders(rest.stream().map(h -> (HttpHeader) RawHeader.create(h.name(), h.value())).toList());
  }
}
