package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code --log-format json}: one object a line with the flat fields log tools index. */
class JsonLogEncoderTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final LoggerContext context = new LoggerContext();

  JsonLogEncoderTest() {
    context.setMDCAdapter(new LogbackMDCAdapter());
  }

  private JsonNode encode(LoggingEvent event) throws Exception {
    String line = new String(new JsonLogEncoder().encode(event), StandardCharsets.UTF_8);
    assertTrue(line.endsWith("}\n") && line.indexOf('\n') == line.length() - 1, "one line: " + line);
    return JSON.readTree(line);
  }

  @Test
  void aLineHasTimeLevelLoggerThreadNodeAndMessage() throws Exception {
    context.putProperty(NodeName.LOG_PROPERTY, "corral-1");
    LoggingEvent event = new LoggingEvent("fqcn", context.getLogger("dev.corral.server.CorralServer"), Level.INFO,
        "listening on {}", null, new Object[] {"http://127.0.0.1:8080"});
    event.setInstant(Instant.parse("2025-03-12T10:00:00.123Z"));
    event.setThreadName("main");
    JsonNode json = encode(event);
    assertEquals("2025-03-12T10:00:00.123Z", json.get("time").asText());
    assertEquals("INFO", json.get("level").asText());
    assertEquals("dev.corral.server.CorralServer", json.get("logger").asText());
    assertEquals("main", json.get("thread").asText());
    assertEquals("corral-1", json.get("node").asText());
    assertEquals("listening on http://127.0.0.1:8080", json.get("message").asText());
    assertFalse(json.has("stack") || json.has("mdc") || json.has("fields"), json.toString());
  }

  @Test
  void theExceptionIsOneStringWithItsCauseAndTheMdcAnObject() throws Exception {
    LoggingEvent event = new LoggingEvent("fqcn", context.getLogger("x"), Level.ERROR, "failed \"x\"\nagain",
        new IllegalStateException("outer", new java.io.IOException("inner")), null);
    event.setMDCPropertyMap(Map.of("pekkoSource", "pekko://corral/user"));
    JsonNode json = encode(event);
    assertEquals("failed \"x\"\nagain", json.get("message").asText());
    String stack = json.get("stack").asText();
    assertTrue(stack.startsWith("java.lang.IllegalStateException: outer"), stack);
    assertTrue(stack.contains("\tat dev.corral.server.JsonLogEncoderTest."), stack);
    assertTrue(stack.contains("Caused by: java.io.IOException: inner"), stack);
    assertEquals("pekko://corral/user", json.get("mdc").get("pekkoSource").asText());
  }
}
