package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 12, slowloris: Pekko's idle timeout starts again with every byte, so a client trickling
 * a request head one byte at a time was never cut. The node's header-read timeout (2 s here)
 * closes a connection whose first head is not complete in time, and its idle timeout (4 s here)
 * bounds a later head on a keep-alive connection, while normal clients, keep-alive ones
 * included, are served. The trickle (a byte every 100 ms) is far more often than either timeout,
 * and a connection still open after 20 s fails the test.
 */
class SlowHeadIT {
  private static final Duration CUT_LIMIT = Duration.ofSeconds(20);
  private static final String HEAD = "GET /-/health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n";

  @RegisterExtension final CorralProcesses processes = new CorralProcesses();
  @TempDir Path temp;
  private String base;

  @BeforeEach
  void start() {
    CorralProcess node = processes.track(uncheckedServe());
    base = node.awaitListening(Duration.ofSeconds(60));
  }

  private CorralProcess uncheckedServe() {
    try {
      return CorralProcess.serve("slow-head", List.of(), temp.resolve("data"),
          List.of("--header-read-timeout", "2s", "--idle-timeout", "4s"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  @Test
  void aClientTricklingItsFirstHeadIsCutWhileANormalClientIsServed() throws Exception {
    try (Socket slow = connect()) {
      Trickle trickle = Trickle.start(slow.getOutputStream(), HEAD);
      assertTrue(trickle.begun.await(10, TimeUnit.SECONDS));
      assertEquals(200, Http.getBytes(base + "/-/health/live").statusCode(), "a normal client is served meanwhile");
      byte[] answer = readUntilClosed(slow);
      trickle.stop();
      assertEquals("", new String(answer, StandardCharsets.ISO_8859_1), "closed without an answer");
      assertTrue(trickle.sent.get() > 0, "the head was still trickling in");
    }
    assertEquals(1, headTimeouts("first-request"));
  }

  @Test
  void aKeepAliveClientIsServedTwiceThenCutWhenItTricklesItsNextHead() throws Exception {
    try (Socket client = connect()) {
      OutputStream out = client.getOutputStream();
      InputStream in = client.getInputStream();
      out.write((HEAD + "\r\n").getBytes(StandardCharsets.US_ASCII));
      assertTrue(readResponse(in).startsWith("HTTP/1.1 200"));
      out.write((HEAD + "\r\n").getBytes(StandardCharsets.US_ASCII));
      assertTrue(readResponse(in).startsWith("HTTP/1.1 200"), "the same connection serves a second request");
      Trickle trickle = Trickle.start(out, HEAD);
      byte[] answer = readUntilClosed(client);
      trickle.stop();
      assertEquals("", new String(answer, StandardCharsets.ISO_8859_1), "closed without a third answer");
    }
    assertEquals(0, headTimeouts("first-request"));
    assertEquals(1, headTimeouts("next-request"));
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), ConnectionFloodIT.Loopback.port(base));
    s.setSoTimeout((int) CUT_LIMIT.toMillis());
    return s;
  }

  /** Reads until the node closes the connection; fails if it is still open after {@link #CUT_LIMIT}. */
  private static byte[] readUntilClosed(Socket s) throws IOException {
    ByteArrayOutputStream got = new ByteArrayOutputStream();
    byte[] buf = new byte[4096];
    try {
      for (int n; (n = s.getInputStream().read(buf)) >= 0; ) {
        got.write(buf, 0, n);
      }
    } catch (SocketTimeoutException e) {
      throw new AssertionError("the node kept the trickling connection open for " + CUT_LIMIT);
    } catch (IOException e) {
      // reset by the node: closed all the same
    }
    return got.toByteArray();
  }

  /** One response: its head, and its body as long as Content-Length says (the connection stays open). */
  private static String readResponse(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int b = in.read();
      if (b < 0) {
        throw new AssertionError("closed mid-response: " + head);
      }
      head.write(b);
    }
    String text = head.toString(StandardCharsets.ISO_8859_1);
    Matcher m = Pattern.compile("(?i)content-length: *(\\d+)").matcher(text);
    int length = m.find() ? Integer.parseInt(m.group(1)) : 0;
    in.readNBytes(length);
    return text;
  }

  private long headTimeouts(String phase) throws Exception {
    String metrics = new String(Http.getBytes(base + "/-/metrics").body(), StandardCharsets.UTF_8);
    Matcher m = Pattern.compile("corral_http_head_timeouts_total\\{phase=\"" + phase + "\"} ([0-9.]+)").matcher(metrics);
    return m.find() ? (long) Double.parseDouble(m.group(1)) : 0;
  }

  /** Writes {@code start}, then one header byte every 100 ms until stopped or the connection breaks. */
  static final class Trickle {
    final CountDownLatch begun = new CountDownLatch(1);
    final AtomicInteger sent = new AtomicInteger();
    private final Thread thread;
    private volatile boolean stopped;

    private Trickle(OutputStream out, String start) {
      thread = new Thread(() -> {
        try {
          out.write(start.getBytes(StandardCharsets.US_ASCII));
          out.flush();
          begun.countDown();
          byte[] header = "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              .getBytes(StandardCharsets.US_ASCII);
          for (int i = 0; !stopped && i < 2_000; i++) { // bounded: 200 s at most
            out.write(header[i % header.length]);
            out.flush();
            sent.incrementAndGet();
            Thread.sleep(100); // the attack's pace, not a verdict
          }
        } catch (IOException | InterruptedException e) {
          // the node closed the connection
        }
      }, "trickle");
      thread.setDaemon(true);
    }

    static Trickle start(OutputStream out, String start) {
      Trickle t = new Trickle(out, start);
      t.thread.start();
      return t;
    }

    void stop() throws InterruptedException {
      stopped = true;
      thread.join(5_000);
    }
  }
}
