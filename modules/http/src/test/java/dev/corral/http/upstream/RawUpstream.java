package dev.corral.http.upstream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicInteger;

/** A raw socket upstream on 127.0.0.1 for misbehaviour HttpServer refuses: short bodies, resets. */
public final class RawUpstream implements AutoCloseable {
  public interface Script {
    void answer(Socket socket, OutputStream out) throws Exception;
  }

  private final ServerSocket server;
  private final Thread acceptor;
  public final AtomicInteger requests = new AtomicInteger();

  public RawUpstream(Script script) {
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

  private void serve(Socket socket, Script script) {
    try (socket) {
      readHead(socket.getInputStream());
      requests.incrementAndGet();
      script.answer(socket, socket.getOutputStream());
    } catch (Exception ignored) {
      // the client went away; nothing to do
    }
  }

  private static void readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    while (matched < 4) {
      int b = in.read();
      if (b < 0) throw new IOException("closed before the request head ended");
      head.write(b);
      matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
    }
  }

  public String url(String path) {
    return "http://127.0.0.1:" + server.getLocalPort() + path;
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
