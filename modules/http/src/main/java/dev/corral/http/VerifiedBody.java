package dev.corral.http;

import dev.corral.core.key.Digest;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A body passed on to a client while it is hashed, its last chunk held back until the whole body
 * is known to hash to the expected digest (SEMANTICS B1, as {@code GrowingBlob} does for a
 * download): on a mismatch the stream fails before its last byte, so the client's connection is
 * cut short of the {@code Content-Length} (or of the last chunk) and never holds the body complete.
 */
final class VerifiedBody {
  private static final Logger log = LoggerFactory.getLogger(VerifiedBody.class);

  private VerifiedBody() {}

  /** The bytes did not hash to what they must. */
  static final class Mismatch extends RuntimeException {
    Mismatch(String message) {
      super(message, null, false, false);
    }
  }

  /** Passes the body through, failing it before its last byte unless it hashes to {@code expected}. */
  static Flow<ByteString, ByteString, NotUsed> of(Digest expected, String what) {
    return Flow.<ByteString>create()
        .map(Optional::of)
        .concat(Source.single(Optional.<ByteString>empty())) // the end, reached only when upstream completes
        .statefulMapConcat(() -> {
          MessageDigest md = digest(expected);
          ByteString[] held = {ByteString.emptyByteString()};
          return chunk -> {
            if (chunk.isPresent()) {
              if (chunk.get().isEmpty()) {
                return List.of();
              }
              md.update(chunk.get().asByteBuffer());
              ByteString out = held[0];
              held[0] = chunk.get();
              return out.isEmpty() ? List.of() : List.of(out);
            }
            String actual = HexFormat.of().formatHex(md.digest());
            if (!actual.equals(expected.hex())) {
              Mismatch m = new Mismatch(what + ": expected " + expected + " but the body hashed to "
                  + expected.algorithm() + ":" + actual + "; the stream is cut before its last byte");
              log.warn(m.getMessage());
              throw m;
            }
            return held[0].isEmpty() ? List.of() : List.of(held[0]);
          };
        });
  }

  private static MessageDigest digest(Digest d) {
    try {
      return MessageDigest.getInstance(d.jcaName());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
