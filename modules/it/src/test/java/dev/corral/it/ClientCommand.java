package dev.corral.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real package client (npm, pip) run as a process with a bounded time, its output captured.
 * A client missing from the machine fails the test with a clear message, never skips it.
 */
final class ClientCommand {
  private ClientCommand() {}

  /** What a client run printed and how it ended. */
  record Result(List<String> command, int exit, String output) {
    Result ok() {
      if (exit != 0) {
        throw new AssertionError("client failed (exit " + exit + "): " + String.join(" ", command) + "\n" + output);
      }
      return this;
    }
  }

  /** Fails unless {@code tool} is on the PATH. */
  static void require(String tool, String why) {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
        return;
      }
    }
    throw new AssertionError("'" + tool + "' is not on the PATH (" + path + "); " + why
        + " needs it: install it (Debian: apt-get install -y " + tool + ")");
  }

  static Result run(Path dir, Map<String, String> env, Duration timeout, List<String> command)
      throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Path log = Files.createTempFile(dir, "client-", ".log");
    ProcessBuilder b = new ProcessBuilder(command).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    b.environment().putAll(env);
    Process p = b.start();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      throw new AssertionError("client did not finish within " + timeout + ": " + String.join(" ", command)
          + "\n" + Files.readString(log));
    }
    return new Result(List.copyOf(command), p.exitValue(), Files.readString(log));
  }

  static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Regular files under {@code root} whose bytes are exactly {@code bytes}. */
  static List<Path> filesWithContent(Path root, byte[] bytes) throws IOException {
    String want = sha256(bytes);
    List<Path> out = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
        if (Files.size(f) == bytes.length && sha256(Files.readAllBytes(f)).equals(want)) {
          out.add(f);
        }
      }
    }
    return out;
  }
}
