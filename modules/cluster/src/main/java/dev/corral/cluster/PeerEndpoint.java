package dev.corral.cluster;

import dev.corral.core.download.GrowingBlob;
import dev.corral.core.fetch.Node;
import dev.corral.core.store.KeyPrefix;
import dev.corral.core.store.StoredArtifact;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.NotUsed;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * The internal endpoint other nodes copy bytes from, served on its own port ({@link PeerPort}:
 * HTTPS with client certificates from the cluster's CA when the cluster has its identity). It
 * serves only what is safe to give any member of the cluster:
 *
 * <ul>
 *   <li>{@code GET /-/peer/blobs/<sha256>}: a committed blob of this node's store, by content
 *       address (the name is the SHA-256 of the bytes, so nothing can be asked for by key or URL).
 *       A whole blob is hashed as it streams and the transfer is aborted before its last byte if
 *       it does not match its name; the store then drops the blob (F2). A range is not verified
 *       (the copying node verifies the whole copy, B1);
 *   <li>{@code GET /-/peer/downloads/<id>}: a large body this node is downloading right now, read
 *       while it grows exactly as local waiters read it ({@link GrowingBlob}: the last byte is held
 *       back until the download is verified, and the transfer is aborted if it fails).
 * </ul>
 *
 * Both answer 200 with an exact {@code Content-Length}, or 206 for a single {@code Range:
 * bytes=N-} / {@code bytes=N-M} (to resume a copy); 404 when not held (any more), 400 for any
 * other path, 405 for any other method, 416 for a range beyond the end. The endpoint never
 * refuses a copy for load: the key's entity spreads copies over the nodes (fan-out, issue 17),
 * and a copy refused here would count as its holder's failure and could end at the upstream
 * (a 503 cap, tried on 2026-12-06, made DrainIT fetch a key twice). A node still receiving its
 * own copy serves it here too, as its download.
 *
 * <p>{@code DELETE /-/peer/keys/<key id>}: the key's fetch entity tells a holder to delete its
 * copy (a cluster-wide purge); 200 when it was held, 404 when not. {@code DELETE
 * /-/peer/keys?repo=R&prefix=P}: the node that takes a purge by prefix tells every other node to
 * delete its copies of the matching keys ({@link KeyPrefix}); 200 with the ids of the keys it held,
 * one a line. Any other DELETE is 405.
 */
public final class PeerEndpoint {
  public static final String PREFIX = "/-/peer/";
  private static final Pattern BLOB = Pattern.compile("/-/peer/blobs/([0-9a-f]{64})");
  private static final Pattern KEY = Pattern.compile("/-/peer/keys/([0-9a-f]{64})");
  private static final Pattern KEY_ID = Pattern.compile("[0-9a-f]{64}");
  private static final Pattern DOWNLOAD = Pattern.compile("/-/peer/downloads/([0-9]{1,18})");
  private static final Pattern RANGE = Pattern.compile("bytes=([0-9]{1,18})-([0-9]{0,18})");

  private final Node node;
  private final PeerTransfers transfers;

  /** Where a committed blob is read, under a node's peer base URL. */
  static String blobPath(String sha256) {
    return PREFIX + "blobs/" + sha256;
  }

  /** Where a holder is told to delete its copy of a key, under a node's peer base URL. */
  static String keyPath(String keyId) {
    return PREFIX + "keys/" + keyId;
  }

  /** Where a node is told to delete its copies of the keys a prefix matches, under its peer base URL. */
  static String prefixPath(KeyPrefix prefix) {
    return PREFIX + "keys?repo=" + URLEncoder.encode(prefix.repo(), StandardCharsets.UTF_8)
        + "&prefix=" + URLEncoder.encode(prefix.urlPrefix(), StandardCharsets.UTF_8);
  }

  /** The largest answer to a purge by prefix: a million key ids. */
  static final int MAX_DROPPED_BYTES = 65 * 1_000_000;

  /** The key ids of an answer to a purge by prefix. */
  static List<String> droppedIds(String body) {
    List<String> ids = new ArrayList<>();
    for (String line : body.split("\n")) {
      if (KEY_ID.matcher(line).matches()) {
        ids.add(line);
      } else if (!line.isEmpty()) {
        throw new IllegalArgumentException("not a key id: " + line);
      }
    }
    return ids;
  }

  /** Where a download in progress is read, under a node's peer base URL. */
  static String downloadPath(long downloadId) {
    return PREFIX + "downloads/" + downloadId;
  }

  public PeerEndpoint(Node node) {
    this(node, PeerTransfers.NONE);
  }

  /** Each blob or download transfer (not a DELETE, nor a refused request) is told to {@code transfers}. */
  public PeerEndpoint(Node node, PeerTransfers transfers) {
    this.node = node;
    this.transfers = transfers;
  }

  /** Answers a request whose path starts with {@link #PREFIX}. */
  public HttpResponse handle(HttpRequest request, String path) {
    Matcher key = KEY.matcher(path);
    if (request.method() == HttpMethods.DELETE && key.matches()) {
      try {
        return node.store().remove(key.group(1)) ? text(200, "deleted") : text(404, "not held here");
      } catch (java.io.IOException e) {
        return text(500, "could not delete: " + e.getMessage());
      }
    }
    if (request.method() == HttpMethods.DELETE && path.equals(PREFIX + "keys")) {
      return dropMatching(request);
    }
    if (request.method() != HttpMethods.GET) {
      return text(405, "peer endpoints answer GET (and DELETE of /-/peer/keys/<key id> or /-/peer/keys?repo=&prefix=)")
          .addHeader(RawHeader.create("Allow", "GET"));
    }
    Matcher blob = BLOB.matcher(path);
    if (blob.matches()) {
      String sha256 = blob.group(1);
      OptionalLong size = node.store().blobSize(sha256);
      if (size.isEmpty()) {
        transfers.sent(PeerTransfers.Result.NOT_FOUND, 0);
        return text(404, "no such blob here");
      }
      StoredArtifact at = new StoredArtifact("-", "-", sha256, size.getAsLong(), List.of(), 0);
      return ranged(request, size.getAsLong(),
          (offset, length) -> node.store().read(at, offset, length));
    }
    Matcher download = DOWNLOAD.matcher(path);
    if (download.matches()) {
      Optional<GrowingBlob> growing = node.downloads().find(Long.parseLong(download.group(1)));
      if (growing.isEmpty()) {
        transfers.sent(PeerTransfers.Result.NOT_FOUND, 0);
        return text(404, "no such download running here");
      }
      GrowingBlob g = growing.get();
      return ranged(request, g.total(), (offset, length) -> {
        Source<ByteString, NotUsed> rest = g.reader(offset);
        return length == g.total() - offset ? rest : rest.via(Take.bytes(length));
      });
    }
    return text(400, "not a peer resource");
  }

  private HttpResponse dropMatching(HttpRequest request) {
    var query = request.getUri().query();
    KeyPrefix prefix;
    try {
      prefix = new KeyPrefix(query.get("repo").orElse(""), query.get("prefix").orElse(""));
    } catch (IllegalArgumentException e) {
      return text(400, e.getMessage());
    }
    // Deleting many files is blocking work: done on the node's I/O pool, not the server's
    // threads. A failure fails the body, so the asking node counts this node as not answering.
    var ids = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
      try {
        List<String> dropped = prefix.dropFrom(node.store());
        StringBuilder body = new StringBuilder(dropped.size() * 65 + 1);
        dropped.forEach(id -> body.append(id).append('\n'));
        return ByteString.fromString(body.toString());
      } catch (java.io.IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }, node.io());
    return HttpResponse.create().withEntity(
        HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, Source.completionStage(ids)));
  }

  private interface Body {
    Source<ByteString, NotUsed> read(long offset, long length);
  }

  private HttpResponse ranged(HttpRequest request, long size, Body read) {
    Body body = (offset, length) -> TransferWatch.watched(read.read(offset, length), length, transfers::sending,
        (result, bytes) -> {
          transfers.sendingEnded();
          transfers.sent(result, bytes);
        });
    Optional<String> range = request.getHeader("Range").map(h -> h.value().trim());
    if (range.isEmpty()) {
      return HttpResponse.create().withEntity(
          HttpEntities.create(ContentTypes.APPLICATION_OCTET_STREAM, size, body.read(0, size)));
    }
    Matcher m = RANGE.matcher(range.get());
    if (!m.matches()) {
      return text(400, "only one range bytes=N- or bytes=N-M");
    }
    long first = Long.parseLong(m.group(1));
    long last = m.group(2).isEmpty() ? size - 1 : Math.min(Long.parseLong(m.group(2)), size - 1);
    if (first >= size || last < first) {
      return text(416, "range not satisfiable").addHeader(RawHeader.create("Content-Range", "bytes */" + size));
    }
    long length = last - first + 1;
    return HttpResponse.create().withStatus(StatusCodes.PARTIAL_CONTENT)
        .addHeader(RawHeader.create("Content-Range", "bytes " + first + "-" + last + "/" + size))
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_OCTET_STREAM, length, body.read(first, length)));
  }

  private static HttpResponse text(int status, String reason) {
    return HttpResponse.create().withStatus(StatusCodes.get(status))
        .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, reason + "\n"));
  }
}
