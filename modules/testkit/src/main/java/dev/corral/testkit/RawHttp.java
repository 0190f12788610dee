package dev.corral.testkit;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 on a raw socket: the request target goes out byte for byte (no client-side
 * normalisation), and the response is read as it comes, so a body that ends short of its
 * Content-Length or a connection that is reset is seen as such. Either one request with
 * {@code Connection: close} ({@link #send}, {@link #exchange}) or a kept-alive connection that
 * carries GETs one at a time ({@link #keepAlive}, {@link #get}). Nothing is ever sent twice: the
 * JDK client sends a GET again when its connection closes before the response begins, which
 * would hide a request that a node dropped.
 */
public final class RawHttp implements AutoCloseable {

  /** One response as read off the wire. */
  public record Response(int status, Map<String, String> headers, byte[] body, boolean complete, long finishedNanos) {
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }

    /** The X-Cache header, or {@code (none)}. */
    public String xCache() {
      String value = header("x-cache");
      return value == null ? "(none)" : value;
    }

    public String text() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  private final Socket socket;
  private final InputStream in;
  private String method;
  private boolean closeAfter;

  private RawHttp(Socket socket, String method) throws IOException {
    this.socket = socket;
    this.in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    this.method = method;
  }

  private static Socket connect(InetSocketAddress address, Duration readTimeout) throws IOException {
    Socket socket = new Socket();
    socket.connect(new InetSocketAddress("127.0.0.1", address.getPort()), 10_000);
    socket.setSoTimeout((int) readTimeout.toMillis());
    return socket;
  }

  /** Opens a kept-alive connection and sends nothing yet; each read waits at most {@code readTimeout}. */
  public static RawHttp keepAlive(InetSocketAddress address, Duration readTimeout) throws IOException {
    return new RawHttp(connect(address, readTimeout), "GET");
  }

  /**
   * Sends one GET on this kept-alive connection and reads its whole response. A response that
   * does not arrive whole (the connection ended or was reset first) is an {@link IOException}.
   */
  public Response get(String target, String... headerLines) throws IOException {
    method = "GET";
    StringBuilder head = new StringBuilder()
        .append("GET ").append(target).append(" HTTP/1.1\r\n")
        .append("Host: 127.0.0.1:").append(socket.getPort()).append("\r\n");
    for (String h : headerLines) {
      head.append(h).append("\r\n");
    }
    socket.getOutputStream().write(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
    socket.getOutputStream().flush();
    Response r = read();
    if (!r.complete()) {
      throw new IOException(r.status() == 0
          ? "connection ended before a response to GET " + target
          : "response to GET " + target + " ended after " + r.body().length + " bytes");
    }
    closeAfter |= "close".equalsIgnoreCase(r.header("connection"));
    return r;
  }

  /** Whether another {@link #get} may go on this connection (no {@code Connection: close} seen, not closed). */
  public boolean reusable() {
    return !closeAfter && !socket.isClosed();
  }

  /** Connects and sends one request with {@code Connection: close}; read its answer with {@link #read}. */
  public static RawHttp send(InetSocketAddress address, String method, String target, String... headerLines)
      throws IOException {
    Socket socket = connect(address, Duration.ofSeconds(30));
    StringBuilder head = new StringBuilder()
        .append(method).append(' ').append(target).append(" HTTP/1.1\r\n")
        .append("Host: 127.0.0.1:").append(address.getPort()).append("\r\n")
        .append("Connection: close\r\n");
    for (String h : headerLines) {
      head.append(h).append("\r\n");
    }
    head.append("\r\n");
    socket.getOutputStream().write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
    socket.getOutputStream().flush();
    return new RawHttp(socket, method);
  }

  public static Response exchange(InetSocketAddress address, String method, String target, String... headerLines)
      throws IOException {
    try (RawHttp http = send(address, method, target, headerLines)) {
      return http.read();
    }
  }

  /**
   * Reads the whole response. {@code complete} is false when the connection ended (EOF or reset)
   * before the body's declared length or its last chunk; a connection that ended before a whole
   * response head is status 0, not complete.
   */
  public Response read() throws IOException {
    String head;
    try {
      head = readHead(in);
    } catch (SocketTimeoutException e) {
      throw e;
    } catch (IOException aborted) {
      return new Response(0, Map.of(), new byte[0], false, System.nanoTime());
    }
    String[] lines = head.split("\r\n");
    int status = Integer.parseInt(lines[0].split(" ")[1]);
    Map<String, String> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).trim());
    }
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    boolean complete;
    if (method.equals("HEAD") || status == 304 || status == 204) {
      complete = true;
    } else if (headers.containsKey("content-length")) {
      long length = Long.parseLong(headers.get("content-length"));
      complete = copy(in, body, length) == length;
    } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      complete = dechunk(in, body);
    } else {
      copy(in, body, Long.MAX_VALUE);
      complete = true;
    }
    return new Response(status, headers, body.toByteArray(), complete, System.nanoTime());
  }

  /** Reads a response head up to and including its blank line (ISO-8859-1); fails on EOF before it. */
  public static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int matched = 0;
    byte[] end = {'\r', '\n', '\r', '\n'};
    while (matched < 4) {
      int b = in.read();
      if (b < 0) {
        throw new IOException("connection closed before the response head ended: " + head);
      }
      head.write(b);
      matched = b == end[matched] ? matched + 1 : (b == '\r' ? 1 : 0);
    }
    return head.toString(StandardCharsets.ISO_8859_1);
  }

  /** Copies up to {@code limit} bytes; returns how many came before EOF or a reset. */
  private static long copy(InputStream in, ByteArrayOutputStream out, long limit) throws IOException {
    byte[] buf = new byte[64 * 1024];
    long total = 0;
    try {
      while (total < limit) {
        int n = in.read(buf, 0, (int) Math.min(buf.length, limit - total));
        if (n < 0) {
          break;
        }
        out.write(buf, 0, n);
        total += n;
      }
    } catch (SocketTimeoutException e) {
      throw e;
    } catch (IOException reset) {
      // an aborted connection: what arrived is all there is
    }
    return total;
  }

  private static boolean dechunk(InputStream in, ByteArrayOutputStream out) throws IOException {
    try {
      while (true) {
        String sizeLine = line(in);
        if (sizeLine == null) {
          return false;
        }
        int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
        if (size == 0) {
          return true;
        }
        if (copy(in, out, size) != size || line(in) == null) {
          return false;
        }
      }
    } catch (SocketTimeoutException e) {
      throw e;
    } catch (IOException reset) {
      return false;
    }
  }

  private static String line(InputStream in) throws IOException {
    StringBuilder s = new StringBuilder();
    int b;
    while ((b = in.read()) >= 0) {
      if (b == '\n') {
        return s.toString().trim();
      }
      s.append((char) b);
    }
    return null;
  }

  /** The raw response bytes, for a test that reads part of a response and hangs up. */
  public InputStream input() {
    return in;
  }

  /** Aborts the connection with a TCP reset (RST) instead of an orderly close (FIN). */
  public void reset() throws IOException {
    socket.setSoLinger(true, 0);
    socket.close();
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
