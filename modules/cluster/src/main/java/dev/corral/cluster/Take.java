package dev.corral.cluster;

import java.util.List;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/** The first {@code n} bytes of a byte stream; completes as soon as they have passed. */
public final class Take {
  private Take() {}

  public static Flow<ByteString, ByteString, NotUsed> bytes(long n) {
    return Flow.of(ByteString.class)
        .statefulMapConcat(() -> {
          long[] left = {n};
          return chunk -> {
            ByteString part = chunk.size() <= left[0] ? chunk : chunk.take((int) left[0]);
            left[0] -= part.size();
            return List.of(Pair.create(part, left[0] <= 0));
          };
        })
        .takeWhile(p -> !p.second(), true)
        .map(Pair::first);
  }
}
