package dev.corral.it;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real PostgreSQL server for one test class, from {@code src/test/scripts/postgres.sh}:
 * started on a free port on 127.0.0.1 before the class's first test (installed from Debian's
 * packages when missing), stopped and its directory removed after the last one. Each call of
 * {@link #newDatabase} gives a fresh database with its own user and password, so tests in a class
 * do not see each other's tables.
 *
 * <pre>{@code @RegisterExtension static final Postgres postgres = new Postgres();}</pre>
 */
final class Postgres implements BeforeAllCallback, AfterAllCallback {
  /** A database and the credentials of its owner. */
  record Database(String url, String user, String password) {}

  private static final AtomicInteger SEQ = new AtomicInteger();
  private Path dir;
  private int port;

  static Path script() {
    return CorralProcess.moduleDir().resolve("src/test/scripts/postgres.sh");
  }

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    // The port is picked here and handed to the server; another process could take it in
    // between, so one retry with a new port.
    IOException last = null;
    for (int attempt = 0; attempt < 2 && dir == null; attempt++) {
      int candidate = freePort();
      try {
        List<String> out = run(List.of("start", String.valueOf(candidate)), 300);
        for (String line : out) {
          if (line.startsWith("dir=")) {
            dir = Path.of(line.substring(4));
          }
        }
        port = candidate;
      } catch (IOException e) {
        last = e;
      }
    }
    if (dir == null) {
      throw new IllegalStateException("PostgreSQL did not start", last);
    }
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    if (dir != null) {
      run(List.of("stop", dir.toString()), 60);
      dir = null;
    }
  }

  int port() {
    return port;
  }

  /** A new database owned by a new user, e.g. {@code jdbc:postgresql://127.0.0.1:PORT/corral_3}. */
  Database newDatabase() throws IOException, InterruptedException {
    String name = "corral_" + SEQ.incrementAndGet();
    String password = "pw-" + Long.toHexString(System.nanoTime());
    run(List.of("createdb", dir.toString(), String.valueOf(port), name, password), 60);
    return new Database("jdbc:postgresql://127.0.0.1:" + port + "/" + name, name, password);
  }

  /** Runs {@code sql} in {@code db} as the superuser (to break a schema on purpose). */
  void sql(Database db, String sql) throws IOException, InterruptedException {
    run(List.of("sql", dir.toString(), String.valueOf(port), db.user(), sql), 60);
  }

  /**
   * A port of 127.0.0.1 that nothing uses, for a process to bind a little later. Not one with a
   * connection in TIME_WAIT (the socket does not ask to reuse the address, so the kernel skips
   * those): a server binding it without that option would fail. The nodes' class data sharing
   * archive is made first, so that its training run's connections are not left to collide.
   */
  static int freePort() throws IOException {
    CorralProcess.archiveFlags();
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(false);
      s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0), 1);
      return s.getLocalPort();
    }
  }

  /** Runs the script; its stdout lines, or an IOException carrying its stderr. */
  private static List<String> run(List<String> args, int timeoutSeconds) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("bash", script().toString()));
    command.addAll(args);
    Path err = Files.createTempFile("postgres-sh", ".err");
    try {
      Process p = new ProcessBuilder(command).redirectError(err.toFile()).start();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("postgres.sh " + args + " took over " + timeoutSeconds + " s");
      }
      if (p.exitValue() != 0) {
        throw new IOException("postgres.sh " + args + " failed (exit " + p.exitValue() + "):\n" + Files.readString(err));
      }
      return new String(out, StandardCharsets.UTF_8).lines().toList();
    } finally {
      Files.deleteIfExists(err);
    }
  }
}
