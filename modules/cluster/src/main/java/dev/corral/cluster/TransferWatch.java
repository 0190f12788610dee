package dev.corral.cluster;

import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ObjLongConsumer;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;

/**
 * Reports one peer transfer's body once it has ended: {@link PeerTransfers.Result#OK} when it
 * completed with exactly the bytes it announced (any number when it announced none: {@code expected} -1), else {@link PeerTransfers.Result#FAILED} (broken,
 * short, or cancelled before its end), with the bytes that went through. A body never run is not
 * reported.
 */
final class TransferWatch {
  private TransferWatch() {}

  static Source<ByteString, NotUsed> watched(Source<ByteString, ?> body, long expected,
      ObjLongConsumer<PeerTransfers.Result> report) {
    return watched(body, expected, () -> {}, report);
  }

  /** As above, {@code started} told when a run of the body begins (before its report). */
  static Source<ByteString, NotUsed> watched(Source<ByteString, ?> body, long expected, Runnable started,
      ObjLongConsumer<PeerTransfers.Result> report) {
    // One counter per run of the body.
    return Source.fromMaterializer((mat, attributes) -> {
      started.run();
      AtomicLong bytes = new AtomicLong();
      return body.map(b -> {
        bytes.addAndGet(b.size());
        return b;
      }).watchTermination((m, done) -> {
        done.whenComplete((d, e) -> report.accept(
            e == null && (expected < 0 || bytes.get() == expected) ? PeerTransfers.Result.OK : PeerTransfers.Result.FAILED, bytes.get()));
        return NotUsed.getInstance();
      });
    }).mapMaterializedValue(m -> NotUsed.getInstance());
  }
}
