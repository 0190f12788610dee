package dev.corral.server;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * Where the node's logs go and how they are written ({@link LogOutputs} applies them).
 *
 * @param format the application log's lines on standard output
 * @param accessLog the access log's own destination: a file (appended to), or {@link #STDOUT};
 *     empty: access lines stay application log lines on the logger {@code corral.access}
 * @param accessLogFormat the access log's lines when {@code accessLog} is set
 */
public record LogSettings(Format format, Optional<Path> accessLog, Format accessLogFormat) {
  /** {@code --access-log -}: standard output. */
  public static final Path STDOUT = Path.of("-");

  public enum Format {
    TEXT, JSON;

    /** {@code text} or {@code json}, in any case; empty otherwise. */
    static Optional<Format> parse(String text) {
      return switch (text.trim().toLowerCase(java.util.Locale.ROOT)) {
        case "text" -> Optional.of(TEXT);
        case "json" -> Optional.of(JSON);
        default -> Optional.empty();
      };
    }
  }

  public LogSettings {
    Objects.requireNonNull(format, "format");
    Objects.requireNonNull(accessLog, "accessLog");
    Objects.requireNonNull(accessLogFormat, "accessLogFormat");
  }

  /** Today's logs: text, access lines among the application's. */
  public static LogSettings plain() {
    return new LogSettings(Format.TEXT, Optional.empty(), Format.TEXT);
  }

  @Override
  public String toString() {
    return "log " + format.name().toLowerCase(java.util.Locale.ROOT) + ", access log "
        + accessLog.map(p -> p + " (" + accessLogFormat.name().toLowerCase(java.util.Locale.ROOT) + ")")
            .orElse("in the application log");
  }
}
