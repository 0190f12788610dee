package dev.corral.core.upstream;

import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.util.ByteString;

/**
 * Passes a body through and fails it, instead of completing it, when it ends short of (or runs
 * past) its declared length. Pekko HTTP already fails a truncated fixed-length entity; this makes
 * the guarantee ours (SEMANTICS B2) rather than a detail of the client.
 */
public final class ExactLength extends GraphStage<FlowShape<ByteString, ByteString>> {
  private final long expected;
  private final Inlet<ByteString> in = Inlet.create("ExactLength.in");
  private final Outlet<ByteString> out = Outlet.create("ExactLength.out");
  private final FlowShape<ByteString, ByteString> shape = FlowShape.of(in, out);

  public ExactLength(long expected) {
    this.expected = expected;
  }

  @Override
  public FlowShape<ByteString, ByteString> shape() {
    return shape;
  }

  @Override
  public GraphStageLogic createLogic(Attributes inheritedAttributes) {
    return new GraphStageLogic(shape) {
      private long seen;

      {
        setHandler(in, new AbstractInHandler() {
          @Override
          public void onPush() {
            ByteString chunk = grab(in);
            seen += chunk.size();
            if (seen > expected) {
              failStage(broken("ran past"));
            } else {
              push(out, chunk);
            }
          }

          @Override
          public void onUpstreamFinish() {
            if (seen == expected) {
              completeStage();
            } else {
              failStage(broken("ended at " + seen + " bytes, short of"));
            }
          }
        });
        setHandler(out, new AbstractOutHandler() {
          @Override
          public void onPull() {
            pull(in);
          }
        });
      }
    };
  }

  private UpstreamException broken(String what) {
    return new UpstreamException("reset", "upstream body " + what + " its Content-Length " + expected, false, null);
  }
}
