package dev.corral.server;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.classic.spi.ThrowableProxyUtil;
import ch.qos.logback.core.encoder.EncoderBase;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import org.slf4j.event.KeyValuePair;

/**
 * The application log as one JSON object a line ({@code --log-format json}):
 * <pre>{@code
 * {"time":"2025-03-12T10:00:00.123Z","level":"INFO","logger":"dev.corral.server.CorralServer",
 *  "thread":"main","node":"corral-1","message":"listening on http://127.0.0.1:8080"}
 * }</pre>
 * plus {@code "mdc":{...}} when the event has an MDC, {@code "fields":{...}} with its SLF4J
 * key-value pairs (the access log's, for one), and {@code "stack"}: the exception with its
 * stack trace and causes as one string, as the text log prints it. Logback's own JsonEncoder
 * writes the time as epoch milliseconds, the node among the context's properties and the
 * exception as nested objects of frames; log tools want the flat fields above.
 */
public final class JsonLogEncoder extends EncoderBase<ILoggingEvent> {
  static final DateTimeFormatter TIME =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSX").withZone(ZoneOffset.UTC);
  private static final JsonFactory JSON = new JsonFactory();

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
    ByteArrayOutputStream out = new ByteArrayOutputStream(256);
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      g.writeStringField("time", TIME.format(event.getInstant()));
      g.writeStringField("level", event.getLevel().toString());
      g.writeStringField("logger", event.getLoggerName());
      g.writeStringField("thread", event.getThreadName());
      String node = node(event);
      if (node != null) {
        g.writeStringField("node", node);
      }
      g.writeStringField("message", event.getFormattedMessage());
      Map<String, String> mdc = event.getMDCPropertyMap();
      if (mdc != null && !mdc.isEmpty()) {
        g.writeObjectFieldStart("mdc");
        for (Map.Entry<String, String> e : mdc.entrySet()) {
          g.writeStringField(e.getKey(), e.getValue());
        }
        g.writeEndObject();
      }
      if (event.getKeyValuePairs() != null && !event.getKeyValuePairs().isEmpty()) {
        g.writeObjectFieldStart("fields");
        for (KeyValuePair pair : event.getKeyValuePairs()) {
          g.writeFieldName(pair.key);
          value(g, pair.value);
        }
        g.writeEndObject();
      }
      IThrowableProxy thrown = event.getThrowableProxy();
      if (thrown != null) {
        g.writeStringField("stack", ThrowableProxyUtil.asString(thrown));
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a byte array does not fail
    }
    out.write('\n');
    return out.toByteArray();
  }

  /** The node's name from the logging context ({@link NodeName}), if set. */
  static String node(ILoggingEvent event) {
    var context = event.getLoggerContextVO();
    return context == null ? null : context.getPropertyMap().get(NodeName.LOG_PROPERTY);
  }

  /** Numbers and booleans as themselves, null as null, anything else as its string. */
  static void value(JsonGenerator g, Object value) throws IOException {
    if (value == null) {
      g.writeNull();
    } else if (value instanceof Integer i) {
      g.writeNumber(i);
    } else if (value instanceof Long l) {
      g.writeNumber(l);
    } else if (value instanceof Boolean b) {
      g.writeBoolean(b);
    } else {
      g.writeString(String.valueOf(value));
    }
  }
}
