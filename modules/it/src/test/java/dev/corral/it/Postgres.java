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
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A real PostgreSQL server for the test classes, from {@code src/test/scripts/postgres.sh}:
 * started on a free port on 127.0.0.1 before the first test class that registers this extension
 * (installed from Debian's packages when missing), shared by every later class in the same test
 * JVM, and stopped, its directory removed, when the whole run ends (JUnit closes the root
 * context's store). Each call of {@link #newDatabase} gives a fresh database with its own user
 * and password, so no test sees another's tables. One server rather than one per class: starting
 * one (initdb, start, stop) took about 2 s, paid by each of 15 classes.
 *
 * <pre>{@code @RegisterExtension static final Postgres postgres = new Postgres();}</pre>
 */
final class Postgres implements BeforeAllCallback {
  /** A database and the credentials of its owner. */
  record Database(String url, String user, String password) {}

  private static final AtomicInteger SEQ = new AtomicInteger();
  private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(Postgres.class);
  private Server server;

  static Path script() {
    return CorralProcess.moduleDir().resolve("src/test/scripts/postgres.sh");
  }

  /** The running server: its directory (socket, data, logs) and port; stopped when the run's root context closes. */
  private record Server(Path dir, int port) implements AutoCloseable {
    static Server start() {
      // The port is picked here and handed to the server; another process could take it in
      // between, so one retry with a new port.
      Exception last = null;
      long startedAt = System.nanoTime();
      for (int attempt = 0; attempt < 2; attempt++) {
        try {
          int candidate = freePort();
          List<String> started;
          // The script may install PostgreSQL with apt-get: not while a client is being installed.
          synchronized (ClientCommand.class) {
            started = run(List.of("start", String.valueOf(candidate)), 300);
          }
          for (String line : started) {
            if (line.startsWith("dir=")) {
              System.out.printf("Postgres: started on port %d in %.1f s, shared by the test classes that follow%n",
                  candidate, (System.nanoTime() - startedAt) / 1e9);
              return new Server(Path.of(line.substring(4)), candidate);
            }
          }
        } catch (IOException e) {
          last = e;
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          last = e;
          break;
        }
      }
      throw new IllegalStateException("PostgreSQL did not start", last);
    }

    @Override
    public void close() throws Exception {
      run(List.of("stop", dir.toString()), 60);
    }
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    server = context.getRoot().getStore(NAMESPACE).getOrComputeIfAbsent(Server.class, k -> Server.start(), Server.class);
  }

  int port() {
    return server.port();
  }

  /** A new database owned by a new user, e.g. {@code jdbc:postgresql://127.0.0.1:PORT/corral_3}. */
  Database newDatabase() throws IOException, InterruptedException {
    String name = "corral_" + SEQ.incrementAndGet();
    String password = "pw-" + Long.toHexString(System.nanoTime());
    run(List.of("createdb", server.dir().toString(), String.valueOf(server.port()), name, password), 60);
    return new Database("jdbc:postgresql://127.0.0.1:" + server.port() + "/" + name, name, password);
  }

  /** Runs {@code sql} in {@code db} as the superuser (to break a schema on purpose). */
  void sql(Database db, String sql) throws IOException, InterruptedException {
    run(List.of("sql", server.dir().toString(), String.valueOf(server.port()), db.user(), sql), 60);
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
