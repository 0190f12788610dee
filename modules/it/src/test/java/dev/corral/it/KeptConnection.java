package dev.corral.it;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;

/**
 * One kept-alive HTTP/1.1 connection to a node, GETs only, bodies framed by Content-Length, each
 * read bounded. It never sends a request twice: any failure is the caller's to see. (The JDK
 * client sends a GET again when its connection closes before the response begins, which would
 * hide a request that a node dropped.)
 */
final class KeptConnection implements AutoCloseable {
  record Response(int status, String xCache, byte[] body) {}

  final int incarnation;
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final String host;
  private boolean closeAfter;

  /** {@code incarnation}: the caller's tag for the node process this connection reached. */
  KeptConnection(URI base, int incarnation, Duration readTimeout) throws IOException {
    this.incarnation = incarnation;
    this.host = base.getHost() + ":" + base.getPort();
    socket = new Socket();
    socket.connect(new InetSocketAddress(base.getHost(), base.getPort()), 5_000);
    socket.setSoTimeout((int) readTimeout.toMillis());
    in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    out = socket.getOutputStream();
  }

  boolean open() {
    return !closeAfter && !socket.isClosed();
  }

  Response get(String path) throws IOException {
    out.write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
    out.flush();
    String statusLine = line();
    if (!statusLine.startsWith("HTTP/1.1 ")) {
      throw new IOException("not a status line: '" + statusLine + "'");
    }
    int status = Integer.parseInt(statusLine.substring(9, 12));
    long length = -1;
    String xCache = "(none)";
    for (String h = line(); !h.isEmpty(); h = line()) {
      int colon = h.indexOf(':');
      String name = h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = h.substring(colon + 1).trim();
      switch (name) {
        case "content-length" -> length = Long.parseLong(value);
        case "x-cache" -> xCache = value;
        case "connection" -> closeAfter |= value.equalsIgnoreCase("close");
        case "transfer-encoding" -> throw new IOException("unexpected Transfer-Encoding: " + value);
        default -> { }
      }
    }
    if (length < 0) {
      throw new IOException("no Content-Length (status " + status + ")");
    }
    byte[] body = in.readNBytes((int) length);
    if (body.length != length) {
      throw new IOException("body ended after " + body.length + " of " + length + " bytes");
    }
    return new Response(status, xCache, body);
  }

  private String line() throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int b; (b = in.read()) != '\n'; ) {
      if (b < 0) {
        throw new EOFException("connection closed" + (sb.length() == 0 ? "" : " in '" + sb + "'"));
      }
      if (b != '\r') {
        sb.append((char) b);
      }
    }
    return sb.toString();
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }
}
