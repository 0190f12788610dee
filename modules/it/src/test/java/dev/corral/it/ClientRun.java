package dev.corral.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One run of a real package-manager client ({@code mvn}, {@code go}), its stdout and stderr
 * merged into a file, bounded in time.
 */
record ClientRun(List<String> command, int exitCode, String output) {

  static ClientRun run(Path workDir, Map<String, String> env, Duration timeout, List<String> command)
      throws IOException, InterruptedException {
    Path log = Files.createTempFile("client-run-", ".log");
    try {
      ProcessBuilder builder = new ProcessBuilder(command).directory(workDir.toFile())
          .redirectErrorStream(true).redirectOutput(log.toFile());
      // The test JVM was started by Maven: its variables must not steer the client.
      builder.environment().keySet().removeIf(k -> k.startsWith("MAVEN_") || k.startsWith("GO"));
      builder.environment().putAll(env);
      Process p = builder.start();
      if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
        throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout + "\n"
            + Files.readString(log));
      }
      return new ClientRun(command, p.exitValue(), Files.readString(log));
    } finally {
      Files.deleteIfExists(log);
    }
  }

  /** Whether {@code program} is on the PATH. */
  static boolean onPath(String program) {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, program))) {
        return true;
      }
    }
    return false;
  }

  String describe() {
    return String.join(" ", command) + " -> exit " + exitCode + "\n" + output;
  }
}
