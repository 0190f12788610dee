package dev.corral.it;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One real Corral server process, started from the shaded jar (or through the {@code ./corral}
 * launcher) with its stdout and stderr captured to files under {@code target/it-logs/}. The
 * listening line on stdout is the readiness signal: {@link #awaitListening} waits for it.
 */
final class CorralProcess implements AutoCloseable {
  private static final Pattern LISTENING = Pattern.compile("listening on (https?://[0-9.]+:\\d+)");
  private static final AtomicInteger SEQ = new AtomicInteger();

  private final String name;
  private final Process process;
  private final Path stdoutFile;
  private final Path stderrFile;
  private final CompletableFuture<String> listening = new CompletableFuture<>();
  private final Thread pump;

  private CorralProcess(String name, ProcessBuilder builder) throws IOException {
    this.name = name;
    Path logs = moduleDir().resolve("target/it-logs");
    Files.createDirectories(logs);
    String base = name + "-" + ProcessHandle.current().pid() + "-" + SEQ.incrementAndGet();
    stdoutFile = logs.resolve(base + ".out");
    stderrFile = logs.resolve(base + ".err");
    builder.redirectOutput(ProcessBuilder.Redirect.PIPE);
    builder.redirectError(stderrFile.toFile());
    process = builder.start();
    pump = new Thread(this::pumpStdout, "corral-stdout-" + base);
    pump.setDaemon(true);
    pump.start();
  }

  /** Starts {@code java [javaOpts] -jar <server jar> args...} in the module directory. */
  static CorralProcess start(String name, List<String> javaOpts, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(javaExecutable().toString());
    command.addAll(launcherDefaults());
    command.addAll(archiveFlags());
    command.addAll(javaOpts);
    command.add("-jar");
    command.add(serverJar().toString());
    command.addAll(List.of(args));
    return new CorralProcess(name, new ProcessBuilder(command).directory(moduleDir().toFile()));
  }

  /** Starts any command (for example the {@code ./corral} launcher) with extra environment. */
  static CorralProcess startCommand(String name, Path workDir, Map<String, String> env, List<String> command)
      throws IOException {
    ProcessBuilder builder = new ProcessBuilder(command).directory(workDir.toFile());
    builder.environment().putAll(env);
    return new CorralProcess(name, builder);
  }

  /** {@code serve} on 127.0.0.1, a free port, the given data dir and repositories ({@code NAME=TYPE:URL}). */
  static CorralProcess serve(String name, List<String> javaOpts, Path dataDir, List<String> extraArgs, String... repos)
      throws IOException {
    return serve(name, javaOpts, Map.of(), dataDir, extraArgs, repos);
  }

  /** As above, with extra environment variables (e.g. the {@code CORRAL_*} settings a manifest sets). */
  static CorralProcess serve(String name, List<String> javaOpts, Map<String, String> env, Path dataDir,
      List<String> extraArgs, String... repos) throws IOException {
    List<String> args = new ArrayList<>(List.of("serve", "--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0", "--peer-port", "0",
        "--data-dir", dataDir.toString()));
    for (String r : repos) {
      args.add("--repo");
      args.add(r);
    }
    args.addAll(extraArgs);
    List<String> command = new ArrayList<>();
    command.add(javaExecutable().toString());
    command.addAll(launcherDefaults());
    command.addAll(archiveFlags());
    command.addAll(TEST_JIT);
    command.addAll(javaOpts);
    command.add("-jar");
    command.add(serverJar().toString());
    command.addAll(args);
    return startCommand(name, moduleDir(), env, command);
  }

  /**
   * Node processes of the tests compile with C1 only: a test node serves a few hundred requests,
   * never long enough for C2 to pay back its compile time, and on 2 cores three nodes' C2
   * threads slow every other process of the run (docs/benchmarks.md, issue 14: C1 alone is ready
   * sooner). A test that moves gigabytes gives {@link #FULL_JIT} (C1 code hashes and copies at
   * half the speed: LargeArtifactIT took 60 s instead of 26).
   */
  private static final List<String> TEST_JIT = List.of("-XX:TieredStopAtLevel=1");

  /** Every tier of the JIT, as a node runs in production (the last flag wins). */
  static final String FULL_JIT = "-XX:TieredStopAtLevel=4";

  private static List<String> launcherDefaults;

  /**
   * The JVM flags {@code ./corral} starts a node with when {@code JAVA_OPTS} is not set (its
   * {@code DEFAULT_JAVA_OPTS}: heap, collector), read from the launcher so that a node of the tests
   * is the node users run; a test's own flags come after them and win. Before, the tests' nodes
   * ran the JVM's defaults (G1, a quarter of the machine's memory as heap): on the 2-core machine
   * a start took 0.28 s more CPU and 14 MiB more resident memory than with the launcher's serial
   * collector.
   */
  static synchronized List<String> launcherDefaults() {
    if (launcherDefaults == null) {
      Path launcher = repoRoot().resolve("corral");
      try {
        Matcher m = Pattern.compile("(?m)^DEFAULT_JAVA_OPTS=\"([^\"]*)\"").matcher(Files.readString(launcher));
        if (!m.find()) {
          throw new IllegalStateException("no DEFAULT_JAVA_OPTS=\"...\" line in " + launcher);
        }
        launcherDefaults = List.of(m.group(1).trim().split("\\s+"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return launcherDefaults;
  }

  // ---- class data sharing ------------------------------------------------------------------------

  private static List<String> archiveFlags;

  /**
   * The flags that map a class data sharing archive of the server jar into every node process. The
   * archive is made once per build of the jar, by the same training run as {@code ./corral}'s
   * ({@code dev.corral.server.CdsTraining}), in this module's {@code target/} (not beside the jar,
   * where ServeCommandIT checks that the launcher makes its own): the integration tests start
   * dozens of nodes, and each then skips loading and verifying the classes, about half of a
   * start's CPU on a 2-core machine. When the training fails, nodes start without an archive.
   */
  static synchronized List<String> archiveFlags() {
    if (archiveFlags != null) {
      return archiveFlags;
    }
    archiveFlags = List.of();
    Path jar = serverJar();
    Path archive = moduleDir().resolve("target/it-cds/corral-server.jsa");
    try {
      if (!Files.isRegularFile(archive)
          || Files.getLastModifiedTime(archive).compareTo(Files.getLastModifiedTime(jar)) < 0) {
        Files.createDirectories(archive.getParent());
        Path made = archive.resolveSibling("corral-server.jsa.new");
        Files.deleteIfExists(made);
        List<String> train = new ArrayList<>(List.of(javaExecutable().toString()));
        train.addAll(launcherDefaults()); // as the launcher trains its own
        train.addAll(List.of("-Xlog:cds=off", "-Xlog:cds+dynamic=off", "-XX:ArchiveClassesAtExit=" + made, "-cp",
            jar.toString(), "dev.corral.server.CdsTraining"));
        Process training = new ProcessBuilder(train)
            .redirectErrorStream(true)
            .redirectOutput(archive.resolveSibling("training.log").toFile())
            .start();
        if (!training.waitFor(180, TimeUnit.SECONDS)) {
          training.destroyForcibly();
          System.err.println("CorralProcess: the class data sharing training did not end in 180 s; nodes start without");
          return archiveFlags;
        }
        if (training.exitValue() != 0 || !Files.isRegularFile(made) || Files.size(made) == 0) {
          System.err.println("CorralProcess: the class data sharing training failed (" + archive.resolveSibling("training.log")
              + "); nodes start without");
          return archiveFlags;
        }
        Files.move(made, archive, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      archiveFlags = List.of("-XX:SharedArchiveFile=" + archive, "-Xshare:auto", "-Xlog:cds=off", "-Xlog:cds+dynamic=off");
    } catch (IOException e) {
      System.err.println("CorralProcess: no class data sharing archive: " + e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return archiveFlags;
  }

  // ---- locations --------------------------------------------------------------------------------

  /** The it module's directory (Surefire runs tests there; {@code basedir} when it says so). */
  static Path moduleDir() {
    return Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath().normalize();
  }

  /** The repository root: the parent of {@code modules/}. */
  static Path repoRoot() {
    return moduleDir().getParent().getParent();
  }

  static Path javaExecutable() {
    return Path.of(System.getProperty("java.home"), "bin", "java");
  }

  /** {@code ../server/target/corral-server-*-all.jar}; fails with a clear message when it is missing. */
  static Path serverJar() {
    Path target = moduleDir().resolveSibling("server").resolve("target");
    List<Path> jars = new ArrayList<>();
    if (Files.isDirectory(target)) {
      try (DirectoryStream<Path> ds = Files.newDirectoryStream(target, "corral-server-*-all.jar")) {
        ds.forEach(jars::add);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    if (jars.isEmpty()) {
      throw new IllegalStateException("the shaded server jar is missing: no corral-server-*-all.jar in " + target
          + ". Build it first: mvn -o -B -q -DskipTests -pl modules/server -am package (or run the whole reactor)");
    }
    if (jars.size() > 1) {
      throw new IllegalStateException("several shaded server jars in " + target + ": " + jars);
    }
    return jars.get(0);
  }

  // ---- waiting ----------------------------------------------------------------------------------

  private void pumpStdout() {
    try (InputStream in = process.getInputStream();
         BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
         Writer out = Files.newBufferedWriter(stdoutFile)) {
      String line;
      while ((line = reader.readLine()) != null) {
        out.write(line);
        out.write('\n');
        out.flush();
        Matcher m = LISTENING.matcher(line);
        if (m.find()) {
          listening.complete(m.group(1));
        }
      }
    } catch (IOException e) {
      // the process died; whatever was read is in the file
    } finally {
      listening.completeExceptionally(new IllegalStateException(
          name + " closed its stdout without a listening line (exit " + exitText() + ")\n" + output()));
    }
  }

  /** Waits for the listening line and returns the base URL, e.g. {@code http://127.0.0.1:40123}. */
  String awaitListening(Duration timeout) {
    try {
      return listening.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      throw new AssertionError(name + " did not print its listening line within " + timeout + "\n" + output());
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause().getMessage(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  /** The base URL once listening (call {@link #awaitListening} first). */
  String baseUrl() {
    return Objects.requireNonNull(listening.getNow(null), "not listening yet");
  }

  /** Waits for the process to exit by itself; returns its exit code, or fails after the timeout. */
  int awaitExit(Duration timeout) {
    try {
      if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new AssertionError(name + " did not exit within " + timeout + "\n" + output());
      }
      pump.join(5_000);
      return process.exitValue();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }

  boolean isAlive() {
    return process.isAlive();
  }

  long pid() {
    return process.pid();
  }

  /**
   * SIGTERM: a graceful stop. Through the {@link ProcessHandle}: {@link Process#destroy()} also
   * closes our end of the pipes, which would silence the process's stdout while it drains.
   */
  void terminate() {
    process.toHandle().destroy();
  }

  /** SIGKILL ({@code kill -9}) without waiting: see {@link #kill}. */
  void killNow() {
    process.toHandle().destroyForcibly();
  }

  /** SIGKILL ({@code kill -9}); returns once the process is gone. */
  void kill() {
    process.toHandle().destroyForcibly();
    try {
      if (!process.waitFor(30, TimeUnit.SECONDS)) {
        throw new AssertionError(name + " survived SIGKILL for 30 s");
      }
      pump.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  String stdout() {
    return read(stdoutFile);
  }

  /** The size of everything the process has written to stdout and stderr so far. */
  long logBytes() {
    try {
      return (Files.exists(stdoutFile) ? Files.size(stdoutFile) : 0) + (Files.exists(stderrFile) ? Files.size(stderrFile) : 0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  String stderr() {
    return read(stderrFile);
  }

  /** Both captured streams, for failure messages. */
  String output() {
    return "---- " + name + " stdout (" + stdoutFile + ") ----\n" + tail(stdout())
        + "---- " + name + " stderr (" + stderrFile + ") ----\n" + tail(stderr());
  }

  private static String tail(String s) {
    int max = 20_000;
    return s.length() <= max ? s : "...\n" + s.substring(s.length() - max);
  }

  private static String read(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file) : "";
    } catch (IOException e) {
      return "(unreadable: " + e + ")";
    }
  }

  private String exitText() {
    return process.isAlive() ? "still running" : String.valueOf(process.exitValue());
  }

  /** Stops the process if it still runs: SIGTERM, a bounded wait, then SIGKILL. */
  @Override
  public void close() {
    try {
      if (process.isAlive()) {
        process.toHandle().destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
          process.toHandle().destroyForcibly();
          process.waitFor(15, TimeUnit.SECONDS);
        }
      }
      pump.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }
}
