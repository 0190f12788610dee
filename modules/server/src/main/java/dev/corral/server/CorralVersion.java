package dev.corral.server;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/**
 * What {@code corral --version} prints: {@code corral VERSION} (the project's version, written
 * into {@value #RESOURCE} by the build) and the Java runtime it runs on.
 */
final class CorralVersion {
  static final String RESOURCE = "corral-version.properties";

  private CorralVersion() {}

  /** The project's version, e.g. {@code 0.1.0-SNAPSHOT}; {@code unknown} outside a build. */
  static String version() {
    try (InputStream in = CorralVersion.class.getClassLoader().getResourceAsStream(RESOURCE)) {
      if (in == null) {
        return "unknown";
      }
      Properties p = new Properties();
      p.load(in);
      String v = p.getProperty("version", "").trim();
      return v.isEmpty() || v.startsWith("${") ? "unknown" : v;
    } catch (IOException e) {
      return "unknown";
    }
  }

  /** Two lines: {@code corral VERSION} and {@code Java VERSION (VENDOR, VM)}. */
  static String text() {
    return "corral " + version() + "\nJava " + System.getProperty("java.version") + " ("
        + System.getProperty("java.vendor") + ", " + System.getProperty("java.vm.name") + ")";
  }
}
