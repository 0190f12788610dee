package dev.corral.testkit.upstream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/** A raw socket upstream on 127.0.0.1 for misbehaviour HttpServer refuses: short bodies, resets. */
public final class RawUpstream implements AutoCloseable {
  public interface Script {
    void answer(Socket socket, OutputStream out) throws Exception;
  }

  /** A script that is told the request target (path and query, as sent). */
  public interface TargetScript {
    void answer(String target, Socket socket, OutputStream out) throws Exception;
  }

  private final ServerSocket server;
  private final Thread acceptor;
  public final AtomicInteger requests = new AtomicInteger();
  /** Requests received per request target. */
  public final Map<String, AtomicInteger> requestsByTarget = new ConcurrentHashMap<>();

  public RawUpstream(Script script) {
    this((target, socket, out) -> script.answer(socket, out));
  }

  public RawUpstream(TargetScript script) {
    try {
      server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    acceptor = new Thread(() -> {
      while (!server.isClosed()) {
        try {
          Socket socket = server.accept();
          Thread t = new Thread(() -> serve(socket, script), "raw-upstream-conn");
          t.setDaemon(true);
          t.start();
        } catch (IOException closed) {
          return;
        }
      }
    }, "raw-upstream");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  private void serve(Socket socket, TargetScript script) {
    try (socket) {
      String head = readHead(socket.getInputStream());
      String[] requestLine = head.split("\r\n", 2)[0].split(" ");
      String target = requestLine.length > 1 ? requestLine[1] : "";
      requestsByTarget.computeIfAbsent(target, t -> new AtomicInteger()).incrementAndGet();
      requests.incrementAndGet();
      script.answer(target, socket, socket.getOutputStream());
    } catch (Exception ignored) {
      // the client went away; nothing to do
    }
  }

  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    while (matched < 4) {
      int b = in.read();
      if (b < 0) throw new IOException("closed before the request head ended");
      head.write(b);
      matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return head.toString(java.nio.charset.StandardCharsets.ISO_8859_1);
  }

  /** Requests received so far for one request target. */
  public int requests(String target) {
    AtomicInteger n = requestsByTarget.get(target);
    return n == null ? 0 : n.get();
  }

  public String url(String path) {
    return "http://127.0.0.1:" + server.getLocalPort() + path;
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
