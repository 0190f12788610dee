package dev.corral.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** A process's open descriptors and their limit, from Linux's /proc. */
final class Descriptors {
  /** The most descriptors an idle node holds before any client connects (jars, store, database, cluster). */
  static final int NODE_BASE_MAX = 600;

  private Descriptors() {}

  /** How many descriptors process {@code pid} has open now. */
  static int count(long pid) {
    try (Stream<Path> fds = Files.list(Path.of("/proc", String.valueOf(pid), "fd"))) {
      return (int) fds.count();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list /proc/" + pid + "/fd (Linux only)", e);
    }
  }

  /** The soft open-file limit of process {@code pid} (a JVM raises its own to the hard limit at start). */
  static long limit(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", String.valueOf(pid), "limits"))) {
        if (line.startsWith("Max open files")) {
          String soft = line.substring("Max open files".length()).trim().split("\\s+")[0];
          return soft.equals("unlimited") ? Long.MAX_VALUE : Long.parseLong(soft);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read /proc/" + pid + "/limits (Linux only)", e);
    }
    throw new IllegalStateException("no open-file limit in /proc/" + pid + "/limits");
  }
}
