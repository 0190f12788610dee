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
 * A client missing from the machine is installed from Debian's packages, or fails the test with a
 * clear message; never skipped.
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

  /**
   * Makes sure {@code tool} is on the PATH: when it is missing, installs {@code debianPackage}
   * with apt-get (as root on Debian, as a fresh CI machine is), and fails with a clear message if
   * that is not possible. Never skips. Synchronized: test classes run two at a time, and two
   * apt-get runs at once would fail on dpkg's lock (PostgreSQL's install takes the same lock).
   */
  static synchronized void require(String tool, String debianPackage, String why) throws IOException, InterruptedException {
    if (onPath(tool)) {
      return;
    }
    Path cwd = Path.of(System.getProperty("java.io.tmpdir"));
    Map<String, String> env = Map.of("DEBIAN_FRONTEND", "noninteractive");
    String output = "";
    if (onPath("apt-get")) {
      output = run(cwd, env, Duration.ofMinutes(5), List.of("apt-get", "update", "-qq")).output()
          + run(cwd, env, Duration.ofMinutes(10), List.of("apt-get", "install", "-y", "-qq", debianPackage)).output();
    }
    if (!onPath(tool)) {
      throw new AssertionError("'" + tool + "' is not on the PATH and `apt-get install -y " + debianPackage
          + "` did not provide it; " + why + " needs it\n" + output);
    }
  }

  /**
   * A client from the npm registry (pnpm), installed once with the machine's npm into this
   * module's {@code target/clients/NAME-VERSION} (never globally, so no other project's tool
   * changes): returns its {@code node_modules/.bin/BIN}. Fails with npm's output when that is not
   * possible; never skips.
   */
  static Path requireFromNpm(String name, String version, String bin, String why)
      throws IOException, InterruptedException {
    require("npm", "npm", why);
    Path prefix = CorralProcess.moduleDir().resolve("target/clients/" + name + "-" + version);
    Path exe = prefix.resolve("node_modules/.bin/" + bin);
    if (Files.isExecutable(exe)) {
      return exe;
    }
    Result r = run(prefix, Map.of(), Duration.ofMinutes(5), List.of("npm", "install", "--prefix", prefix.toString(),
        "--no-save", "--no-audit", "--no-fund", "--no-update-notifier", name + "@" + version));
    if (r.exit() != 0 || !Files.isExecutable(exe)) {
      throw new AssertionError("`npm install --prefix " + prefix + " " + name + "@" + version + "` did not provide "
          + exe + "; " + why + " needs it\n" + r.output());
    }
    return exe;
  }

  static boolean onPath(String tool) {
    String path = System.getenv().getOrDefault("PATH", "");
    for (String dir : path.split(java.io.File.pathSeparator)) {
      if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, tool))) {
        return true;
      }
    }
    return false;
  }

  static Result run(Path dir, Map<String, String> env, Duration timeout, List<String> command)
      throws IOException, InterruptedException {
    return run(dir, env, List.of(), timeout, command);
  }

  /**
   * The same with the inherited variables whose names start with one of {@code dropPrefixes}
   * removed first (say, {@code CONTAINER_HOST} would turn podman into a remote client).
   */
  static Result run(Path dir, Map<String, String> env, List<String> dropPrefixes, Duration timeout,
      List<String> command) throws IOException, InterruptedException {
    Files.createDirectories(dir);
    Path log = Files.createTempFile(dir, "client-", ".log");
    ProcessBuilder b = new ProcessBuilder(command).directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(log.toFile());
    b.environment().keySet().removeIf(k -> dropPrefixes.stream().anyMatch(k::startsWith));
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

  /**
   * {@link #run} under {@code strace -f}, which records every address the client and its child
   * processes connect or send to; fails when any is not 127.0.0.1 or ::1 (a registry, a proxy, a
   * telemetry or update endpoint, a DNS server the configuration let through), before looking at
   * how the client ended. Unix sockets and netlink are local and not counted.
   */
  static Result runLoopbackOnly(Path dir, Map<String, String> env, List<String> dropPrefixes, Duration timeout,
      List<String> command) throws IOException, InterruptedException {
    require("strace", "strace", "a client run confined to loopback");
    Files.createDirectories(dir);
    Path trace = Files.createTempFile(dir, "connects-", ".strace");
    List<String> traced = new ArrayList<>(List.of("strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg",
        "-o", trace.toString()));
    traced.addAll(command);
    Result r = run(dir, env, dropPrefixes, timeout, traced);
    List<String> elsewhere = nonLoopbackAddresses(Files.readAllLines(trace));
    if (!elsewhere.isEmpty()) {
      throw new AssertionError(String.join(" ", command) + " reached beyond loopback: " + elsewhere + "\n" + r.output());
    }
    return new Result(List.copyOf(command), r.exit(), r.output());
  }

  private static final java.util.regex.Pattern ADDRESS = java.util.regex.Pattern.compile(
      "inet_addr\\(\"([^\"]*)\"\\)|inet_pton\\(AF_INET6, \"([^\"]*)\"");

  /**
   * The IPv4 and IPv6 socket addresses in strace lines that are not 127.0.0.1, ::1 or
   * ::ffff:127.0.0.1; one whose address cannot be read is returned whole, so it fails too.
   */
  static List<String> nonLoopbackAddresses(List<String> straceLines) {
    List<String> out = new ArrayList<>();
    for (String line : straceLines) {
      for (int at = line.indexOf("sa_family=AF_INET"); at >= 0; at = line.indexOf("sa_family=AF_INET", at + 1)) {
        int end = line.indexOf('}', at);
        String sockaddr = line.substring(at, end < 0 ? line.length() : end);
        java.util.regex.Matcher m = ADDRESS.matcher(sockaddr);
        String address = !m.find() ? sockaddr : m.group(1) != null ? m.group(1) : m.group(2);
        if (!List.of("127.0.0.1", "::1", "::ffff:127.0.0.1").contains(address)) {
          out.add(address);
        }
      }
    }
    return out;
  }

  /**
   * The whole lines of a log another process appends to (none while it does not exist): a last
   * line still being written, without its line break, is left out.
   */
  static List<String> completeLines(Path log) throws IOException {
    if (!Files.exists(log)) {
      return List.of();
    }
    String text = Files.readString(log);
    return text.substring(0, text.lastIndexOf('\n') + 1).lines().toList();
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
