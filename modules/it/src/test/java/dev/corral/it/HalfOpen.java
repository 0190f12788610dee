package dev.corral.it;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Many connections to a loopback port that never finish a request: every second one sends
 * nothing, the others the start of a request head and then nothing more. Non-blocking connects,
 * so connections the kernel cannot take yet (a full accept backlog) do not stall the test; the
 * opening waits at most 30 s for them. Closing closes every one.
 */
final class HalfOpen implements AutoCloseable {
  private static final byte[] PARTIAL_HEAD =
      "GET /-/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Never-Ends: ".getBytes(StandardCharsets.US_ASCII);

  private final List<SocketChannel> channels = new ArrayList<>();
  private int connected;

  private HalfOpen() {}

  static HalfOpen open(int port, int count) throws IOException, InterruptedException {
    InetSocketAddress to = new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    HalfOpen half = new HalfOpen();
    try {
      for (int i = 0; i < count; i++) {
        SocketChannel ch = SocketChannel.open();
        half.channels.add(ch);
        ch.configureBlocking(false);
        if (ch.connect(to)) {
          half.connected(ch);
        }
      }
      List<SocketChannel> pending = new ArrayList<>();
      for (SocketChannel ch : half.channels) {
        if (ch.isConnectionPending()) {
          pending.add(ch);
        }
      }
      long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (!pending.isEmpty() && System.nanoTime() - end < 0) {
        for (Iterator<SocketChannel> it = pending.iterator(); it.hasNext(); ) {
          SocketChannel ch = it.next();
          try {
            if (ch.finishConnect()) {
              half.connected(ch);
              it.remove();
            }
          } catch (IOException e) {
            it.remove(); // refused or reset: not one of ours any more
          }
        }
        if (!pending.isEmpty()) {
          Thread.sleep(20); // pacing the connect poll, not a verdict
        }
      }
      return half;
    } catch (IOException | RuntimeException | InterruptedException e) {
      half.close();
      throw e;
    }
  }

  private void connected(SocketChannel ch) throws IOException {
    connected++;
    if (connected % 2 == 0) {
      try {
        ch.write(ByteBuffer.wrap(PARTIAL_HEAD));
      } catch (IOException e) {
        // already closed by the node: still one that was held
      }
    }
  }

  /** How many of them the kernel has connected. */
  int connected() {
    return connected;
  }

  @Override
  public void close() {
    for (SocketChannel ch : channels) {
      try {
        ch.close();
      } catch (IOException e) {
        // closing anyway
      }
    }
    channels.clear();
  }
}
