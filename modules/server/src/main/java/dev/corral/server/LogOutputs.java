package dev.corral.server;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.OutputStreamAppender;
import ch.qos.logback.core.encoder.Encoder;
import dev.corral.http.AccessLog;
import java.io.IOException;
import java.util.List;
import org.slf4j.LoggerFactory;

/**
 * Applies {@link LogSettings} to the logback configuration that logback.xml made, once, before
 * the node starts ({@code Main}; the settings are per process, so in-process test nodes do not
 * call it). {@code --log-format json} gives the shipped appenders on standard output (STDOUT and
 * ACCESS) a {@link JsonLogEncoder}; {@code --access-log} takes the {@code corral.access} logger's
 * appenders away (logback.xml's or the user's own) and gives it a buffered appender of its own,
 * on a file or standard output, writing {@link AccessLineEncoder} lines.
 */
final class LogOutputs {
  /** logback.xml's appenders on standard output, by name. */
  static final List<String> CONSOLE_APPENDERS = List.of("STDOUT", "ACCESS");
  static final String ACCESS_LOG_APPENDER = "ACCESS_LOG";

  private LogOutputs() {}

  /**
   * @throws SettingsException naming {@code --access-log} when its file cannot be opened for
   *     appending
   */
  static void apply(LogSettings settings) {
    if (LoggerFactory.getILoggerFactory() instanceof LoggerContext context) {
      apply(settings, context);
    } // else not logback: the user's logging is theirs
  }

  static void apply(LogSettings settings, LoggerContext context) {
    if (settings.format() == LogSettings.Format.JSON) {
      for (Logger logger : List.of(context.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME), context.getLogger(AccessLog.LOGGER))) {
        for (String name : CONSOLE_APPENDERS) {
          if (logger.getAppender(name) instanceof OutputStreamAppender<ILoggingEvent> appender) {
            swapEncoder(appender, started(context, new JsonLogEncoder()));
          }
        }
      }
    }
    if (settings.accessLog().isEmpty()) {
      return;
    }
    var target = settings.accessLog().get();
    BufferedConsoleAppender appender;
    if (target.equals(LogSettings.STDOUT)) {
      appender = new BufferedConsoleAppender();
    } else {
      try {
        appender = BufferedConsoleAppender.appendingTo(target);
      } catch (IOException e) {
        throw new SettingsException(Setting.ACCESS_LOG.flag(), "cannot open " + target + " for appending: "
            + (e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage()));
      }
    }
    appender.setContext(context);
    appender.setName(ACCESS_LOG_APPENDER);
    appender.setEncoder(started(context, new AccessLineEncoder(settings.accessLogFormat())));
    appender.start();
    Logger access = context.getLogger(AccessLog.LOGGER);
    access.detachAndStopAllAppenders();
    access.addAppender(appender);
    access.setAdditive(false);
    if (access.getLevel() == null || !access.isInfoEnabled()) {
      access.setLevel(ch.qos.logback.classic.Level.INFO); // asked for by name: on even under CORRAL_LOG_LEVEL=WARN
    }
  }

  private static Encoder<ILoggingEvent> started(LoggerContext context, Encoder<ILoggingEvent> encoder) {
    encoder.setContext(context);
    encoder.start();
    return encoder;
  }

  /**
   * In place, without a stop and start: a plain OutputStreamAppender drops its stream when stopped
   * and cannot start again. The encoders here keep no state between lines, and nothing else logs
   * yet when the node's settings are applied.
   */
  private static void swapEncoder(OutputStreamAppender<ILoggingEvent> appender, Encoder<ILoggingEvent> encoder) {
    appender.setEncoder(encoder);
  }
}
