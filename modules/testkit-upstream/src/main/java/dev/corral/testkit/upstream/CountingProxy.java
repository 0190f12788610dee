package dev.corral.testkit.upstream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * An HTTP proxy on 127.0.0.1 that only tunnels ({@code CONNECT host:port}) and only to loopback
 * addresses, recording each tunnel's target; anything else gets 403 (and is recorded as refused).
 */
public final class CountingProxy implements AutoCloseable {
  private final ServerSocket socket;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  /** Each CONNECT target as asked, in order. */
  public final List<String> tunnels = new CopyOnWriteArrayList<>();
  /** The request lines refused. */
  public final List<String> refused = new CopyOnWriteArrayList<>();

  public CountingProxy() throws IOException {
    socket = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
    executor.execute(this::accept);
  }

  public int port() {
    return socket.getLocalPort();
  }

  public String url() {
    return "http://127.0.0.1:" + port();
  }

  private void accept() {
    while (!socket.isClosed()) {
      try {
        Socket client = socket.accept();
        executor.execute(() -> serve(client));
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket client) {
    try (client) {
      InputStream in = client.getInputStream();
      String head = readHead(in);
      String line = head.lines().findFirst().orElse("");
      String[] parts = line.split(" ");
      OutputStream out = client.getOutputStream();
      if (parts.length != 3 || !parts[0].equals("CONNECT")) {
        refused.add(line);
        out.write("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        return;
      }
      int colon = parts[1].lastIndexOf(':');
      String host = parts[1].substring(0, colon).replace("[", "").replace("]", "");
      InetAddress target = InetAddress.getByName(host);
      if (!target.isLoopbackAddress()) { // tests never leave the machine
        refused.add(line);
        out.write("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        return;
      }
      tunnels.add(parts[1]);
      try (Socket upstream = new Socket()) {
        upstream.connect(new InetSocketAddress(target, Integer.parseInt(parts[1].substring(colon + 1))), 5000);
        out.write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
        out.flush();
        var back = executor.submit(() -> pipe(upstream.getInputStream(), out));
        pipe(in, upstream.getOutputStream());
        upstream.shutdownOutput();
        back.get();
      }
    } catch (Exception e) {
      // the connection ended
    }
  }

  private static Void pipe(InputStream in, OutputStream out) throws IOException {
    byte[] buf = new byte[16384];
    int n;
    while ((n = in.read(buf)) >= 0) {
      out.write(buf, 0, n);
      out.flush();
    }
    return null;
  }

  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    int b;
    while (matched < 4 && (b = in.read()) >= 0) {
      head.write(b);
      matched = (b == '\r' || b == '\n') && (matched % 2 == 0 ? b == '\r' : b == '\n') ? matched + 1 : (b == '\r' ? 1 : 0);
      if (head.size() > 16384) {
        throw new IOException("head too long");
      }
    }
    return head.toString(StandardCharsets.US_ASCII);
  }

  @Override
  public void close() throws IOException {
    socket.close();
    executor.shutdownNow();
  }
}
