package dev.corral.server;

import static dev.corral.http.AccessLog.KEY_BYTES;
import static dev.corral.http.AccessLog.KEY_CACHE;
import static dev.corral.http.AccessLog.KEY_CLIENT;
import static dev.corral.http.AccessLog.KEY_CLIENT_PORT;
import static dev.corral.http.AccessLog.KEY_DURATION_MS;
import static dev.corral.http.AccessLog.KEY_METHOD;
import static dev.corral.http.AccessLog.KEY_PATH;
import static dev.corral.http.AccessLog.KEY_PROTOCOL;
import static dev.corral.http.AccessLog.KEY_REFERER;
import static dev.corral.http.AccessLog.KEY_REPO;
import static dev.corral.http.AccessLog.KEY_STATUS;
import static dev.corral.http.AccessLog.KEY_USER;
import static dev.corral.http.AccessLog.KEY_USER_AGENT;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.encoder.EncoderBase;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.event.KeyValuePair;

/**
 * The access log's own lines ({@code --access-log}), from the key-value pairs
 * {@link dev.corral.http.AccessLog} puts on each event. Text, like Apache's combined log with
 * three fields after it:
 * <pre>
 * 10.0.0.7 - ci [12/Mar/2025:10:00:00 +0000] "GET /npm/left-pad HTTP/1.1" 200 1234 "-" "npm/10.2.4" cache=HIT ms=3 repo=npm
 * </pre>
 * (client address, {@code -}, the credential's NAME or {@code -}, the request's arrival, the
 * request line with the raw path and no query, status, Content-Length or {@code -} when streamed,
 * Referer, User-Agent, then X-Cache, milliseconds to the response head and the repository, each
 * {@code -} when there is none). A quote, backslash, control or non-ASCII byte in a field is
 * written {@code \xHH}, and a space too outside quotes, so a line always splits the same way.
 * JSON: one object a line with {@link #JSON_KEYS}, absent ones {@code null}, numbers as numbers.
 * An event without those pairs (another logger's line sent here) is written as its message.
 */
final class AccessLineEncoder extends EncoderBase<ILoggingEvent> {
  /** The JSON object's keys, in order ({@code time}: the arrival, ISO-8601 UTC with milliseconds). */
  static final List<String> JSON_KEYS = List.of("time", KEY_CLIENT, KEY_CLIENT_PORT, KEY_METHOD, KEY_PATH,
      KEY_PROTOCOL, KEY_STATUS, KEY_CACHE, KEY_BYTES, KEY_DURATION_MS, KEY_REPO, KEY_USER, KEY_REFERER,
      KEY_USER_AGENT, "node");
  private static final DateTimeFormatter CLF_TIME =
      DateTimeFormatter.ofPattern("dd/MMM/yyyy:HH:mm:ss Z", Locale.ENGLISH).withZone(ZoneOffset.UTC);
  private static final JsonFactory JSON = new JsonFactory();

  private final LogSettings.Format format;

  AccessLineEncoder(LogSettings.Format format) {
    this.format = format;
  }

  @Override
  public byte[] headerBytes() {
    return null;
  }

  @Override
  public byte[] footerBytes() {
    return null;
  }

  @Override
  public byte[] encode(ILoggingEvent event) {
    List<KeyValuePair> pairs = event.getKeyValuePairs();
    Map<String, Object> fields = new HashMap<>();
    if (pairs != null) {
      for (KeyValuePair p : pairs) {
        fields.put(p.key, p.value);
      }
    }
    if (!fields.containsKey(KEY_STATUS)) {
      return (event.getFormattedMessage() + "\n").getBytes(StandardCharsets.UTF_8);
    }
    long ms = fields.get(KEY_DURATION_MS) instanceof Number n ? n.longValue() : 0;
    Instant arrival = event.getInstant().minusMillis(ms);
    return format == LogSettings.Format.JSON ? json(fields, arrival, event) : text(fields, arrival);
  }

  private static byte[] text(Map<String, Object> f, Instant arrival) {
    StringBuilder b = new StringBuilder(200);
    bare(b, f.get(KEY_CLIENT)).append(" - ");
    bare(b, f.get(KEY_USER)).append(" [").append(CLF_TIME.format(arrival)).append("] \"");
    bare(b, f.get(KEY_METHOD)).append(' ');
    bare(b, f.get(KEY_PATH)).append(' ');
    bare(b, f.get(KEY_PROTOCOL)).append("\" ");
    bare(b, f.get(KEY_STATUS)).append(' ');
    bare(b, f.get(KEY_BYTES)).append(" \"");
    quoted(b, f.get(KEY_REFERER)).append("\" \"");
    quoted(b, f.get(KEY_USER_AGENT)).append("\" cache=");
    bare(b, f.get(KEY_CACHE)).append(" ms=");
    bare(b, f.get(KEY_DURATION_MS)).append(" repo=");
    bare(b, f.get(KEY_REPO)).append('\n');
    return b.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static StringBuilder bare(StringBuilder b, Object value) {
    return escaped(b, value, false);
  }

  private static StringBuilder quoted(StringBuilder b, Object value) {
    return escaped(b, value, true);
  }

  private static StringBuilder escaped(StringBuilder b, Object value, boolean spaceAllowed) {
    String s = value == null ? "" : String.valueOf(value);
    if (s.isEmpty()) {
      return b.append('-');
    }
    for (byte c : s.getBytes(StandardCharsets.UTF_8)) {
      int u = c & 0xff;
      if (u < 0x20 || u > 0x7e || u == '"' || u == '\\' || (u == ' ' && !spaceAllowed)) {
        b.append("\\x").append(Character.forDigit(u >> 4, 16)).append(Character.forDigit(u & 0xf, 16));
      } else {
        b.append((char) u);
      }
    }
    return b;
  }

  private static byte[] json(Map<String, Object> f, Instant arrival, ILoggingEvent event) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(300);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      for (String key : JSON_KEYS) {
        g.writeFieldName(key);
        switch (key) {
          case "time" -> g.writeString(JsonLogEncoder.TIME.format(arrival));
          case "node" -> JsonLogEncoder.value(g, JsonLogEncoder.node(event));
          default -> JsonLogEncoder.value(g, f.get(key));
        }
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    out.write('\n');
    return out.toByteArray();
  }
}
