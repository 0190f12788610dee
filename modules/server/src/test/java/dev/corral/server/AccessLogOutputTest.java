package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.read.ListAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.http.AccessLog;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.spi.LoggingEventBuilder;

/**
 * The access log's own lines ({@link AccessLineEncoder}) from the key-value pairs AccessLog puts
 * on its events, and {@link LogOutputs} pointing the {@code corral.access} logger at a file.
 */
class AccessLogOutputTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Instant ANSWERED = Instant.parse("2025-03-12T10:00:00.125Z");

  @TempDir Path dir;
  private final LoggerContext context = new LoggerContext();

  AccessLogOutputTest() {
    context.setMDCAdapter(new LogbackMDCAdapter());
    context.putProperty(NodeName.LOG_PROPERTY, "corral-1");
  }

  /** An event as AccessLog makes it: the pairs and the legacy message. */
  private ILoggingEvent event(UnaryOperator<LoggingEventBuilder> pairs) {
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.setContext(context);
    seen.start();
    Logger logger = context.getLogger(AccessLog.LOGGER);
    logger.addAppender(seen);
    pairs.apply(logger.atInfo()).log("legacy message");
    logger.detachAppender(seen);
    LoggingEvent event = (LoggingEvent) seen.list.get(0);
    event.setInstant(ANSWERED);
    return event;
  }

  private static LoggingEventBuilder hit(LoggingEventBuilder b) {
    return b.addKeyValue("client", "10.0.0.7").addKeyValue("client_port", 51234).addKeyValue("method", "GET")
        .addKeyValue("path", "/npm/left-pad").addKeyValue("protocol", "HTTP/1.1").addKeyValue("status", 200)
        .addKeyValue("cache", "HIT").addKeyValue("bytes", 1234L).addKeyValue("duration_ms", 3L)
        .addKeyValue("repo", "npm").addKeyValue("user", "ci").addKeyValue("user_agent", "npm/10.2.4 node/v20");
  }

  private String text(ILoggingEvent e) {
    return new String(new AccessLineEncoder(LogSettings.Format.TEXT).encode(e), StandardCharsets.UTF_8);
  }

  @Test
  void textIsCombinedLogLikeWithTheArrivalTime() {
    assertEquals("10.0.0.7 - ci [12/Mar/2025:10:00:00 +0000] \"GET /npm/left-pad HTTP/1.1\" 200 1234 \"-\""
        + " \"npm/10.2.4 node/v20\" cache=HIT ms=3 repo=npm\n", text(event(AccessLogOutputTest::hit)));
  }

  @Test
  void absentFieldsAreDashesAndOddBytesEscaped() {
    String line = text(event(b -> b.addKeyValue("client", "::1").addKeyValue("method", "GET")
        .addKeyValue("path", "/-/health").addKeyValue("protocol", "HTTP/1.1").addKeyValue("status", 200)
        .addKeyValue("duration_ms", 1500L).addKeyValue("user", "a b").addKeyValue("user_agent", "say \"hi\"\\é")));
    assertEquals("::1 - a\\x20b [12/Mar/2025:09:59:58 +0000] \"GET /-/health HTTP/1.1\" 200 - \"-\""
        + " \"say \\x22hi\\x22\\x5c\\xc3\\xa9\" cache=- ms=1500 repo=-\n", line);
  }

  @Test
  void jsonHasEveryKeyNumbersAsNumbersAbsentAsNull() throws Exception {
    byte[] bytes = new AccessLineEncoder(LogSettings.Format.JSON).encode(event(AccessLogOutputTest::hit));
    String line = new String(bytes, StandardCharsets.UTF_8);
    assertTrue(line.endsWith("}\n") && line.indexOf('\n') == line.length() - 1, line);
    JsonNode json = JSON.readTree(line);
    assertEquals(AccessLineEncoder.JSON_KEYS, iterable(json.fieldNames()));
    assertEquals("2025-03-12T10:00:00.122Z", json.get("time").asText());
    assertEquals("10.0.0.7", json.get("client").asText());
    assertEquals(51234, json.get("client_port").intValue());
    assertEquals("/npm/left-pad", json.get("path").asText());
    assertTrue(json.get("status").isInt() && json.get("status").intValue() == 200, line);
    assertEquals("HIT", json.get("cache").asText());
    assertEquals(1234, json.get("bytes").longValue());
    assertEquals(3, json.get("duration_ms").longValue());
    assertEquals("ci", json.get("user").asText());
    assertTrue(json.get("referer").isNull(), line);
    assertEquals("corral-1", json.get("node").asText());
  }

  @Test
  void aLineWithoutThePairsIsItsMessage() {
    assertEquals("legacy message\n", text(event(b -> b)));
  }

  @Test
  void theAccessLogFileIsAppendedToAndTakesTheLoggerFromItsConsoleAppender() throws Exception {
    ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
    console.setContext(context);
    console.setName("ACCESS");
    PatternLayoutEncoder pattern = new PatternLayoutEncoder();
    pattern.setContext(context);
    pattern.setPattern("%msg%n");
    pattern.start();
    console.setEncoder(pattern);
    console.start();
    Logger access = context.getLogger(AccessLog.LOGGER);
    access.addAppender(console);
    context.getLogger(Logger.ROOT_LOGGER_NAME).setLevel(Level.WARN);
    Path file = dir.resolve("access.log");
    Files.writeString(file, "a line from before\n");

    LogOutputs.apply(new LogSettings(LogSettings.Format.TEXT, Optional.of(file), LogSettings.Format.JSON), context);
    assertEquals(null, access.getAppender("ACCESS"), "the console appender is gone");
    hit(access.atInfo()).log("legacy message");
    context.stop(); // flushes and closes the file

    List<String> lines = Files.readAllLines(file);
    assertEquals(2, lines.size(), lines.toString());
    assertEquals("a line from before", lines.get(0));
    assertEquals("/npm/left-pad", JSON.readTree(lines.get(1)).get("path").asText());
  }

  @Test
  void withoutAnAccessLogJsonApplicationLinesCarryTheAccessFields() throws Exception {
    var out = new java.io.ByteArrayOutputStream();
    ch.qos.logback.core.OutputStreamAppender<ILoggingEvent> console = new ch.qos.logback.core.OutputStreamAppender<>();
    console.setContext(context);
    console.setName("ACCESS");
    console.setOutputStream(out);
    PatternLayoutEncoder pattern = new PatternLayoutEncoder();
    pattern.setContext(context);
    pattern.setPattern("%msg%n");
    pattern.start();
    console.setEncoder(pattern);
    console.start();
    Logger access = context.getLogger(AccessLog.LOGGER);
    access.addAppender(console);

    LogOutputs.apply(new LogSettings(LogSettings.Format.JSON, Optional.empty(), LogSettings.Format.TEXT), context);
    hit(access.atInfo()).log("GET repo=npm ...");
    JsonNode json = JSON.readTree(out.toString(StandardCharsets.UTF_8));
    assertEquals("GET repo=npm ...", json.get("message").asText());
    assertEquals(AccessLog.LOGGER, json.get("logger").asText());
    assertEquals("/npm/left-pad", json.get("fields").get("path").asText());
    assertEquals(200, json.get("fields").get("status").intValue());
  }

  @Test
  void anAccessLogThatCannotBeOpenedIsASettingsError() {
    Path file = dir.resolve("no-such-dir/access.log");
    SettingsException e = org.junit.jupiter.api.Assertions.assertThrows(SettingsException.class, () ->
        LogOutputs.apply(new LogSettings(LogSettings.Format.TEXT, Optional.of(file), LogSettings.Format.TEXT), context));
    assertTrue(e.getMessage().startsWith("--access-log: cannot open " + file + " for appending"), e.getMessage());
  }

  private static List<String> iterable(java.util.Iterator<String> names) {
    List<String> out = new java.util.ArrayList<>();
    names.forEachRemaining(out::add);
    return out;
  }
}
