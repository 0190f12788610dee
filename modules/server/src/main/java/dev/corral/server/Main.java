package dev.corral.server;

/** {@code corral serve ...}: see {@link Cli} for the command line and {@code README.md} for the settings. */
public final class Main {
  private Main() {}

  /**
   * Pekko's Java APIs hand out Scala-backed CompletionStages whose callbacks always run "async"
   * on the common pool; on a machine with 2 cores that pool has one thread and the JDK then
   * starts a new thread per callback, which made every waiter of a shared fetch wait for its own
   * thread start (tens of ms for 50 waiters). Set before anything touches the pool.
   */
  static final String COMMON_POOL_PARALLELISM = "java.util.concurrent.ForkJoinPool.common.parallelism";

  /**
   * {@code corral db init}'s line once the tables are ready in the database at {@code url}, named
   * without the secrets the URL may carry.
   */
  static String tablesReady(String url) {
    return "corral: tables ready in " + JournalDatabase.shown(url);
  }

  public static void main(String[] args) {
    if (System.getProperty(COMMON_POOL_PARALLELISM) == null) {
      System.setProperty(COMMON_POOL_PARALLELISM,
          String.valueOf(Math.max(4, Runtime.getRuntime().availableProcessors())));
    }
    Cli.Command command = Cli.parse(args, System.getenv());
    if (command instanceof Cli.Version v) {
      System.out.println(v.text());
      System.exit(0);
    }
    if (command instanceof Cli.Help h) {
      System.out.println(h.text());
      System.exit(0);
    }
    if (command instanceof Cli.Invalid invalid) {
      System.err.println("corral: " + invalid.message());
      System.exit(invalid.exitCode());
    }
    if (command instanceof Cli.DbInit init) {
      try {
        System.out.println(tablesReady(CorralServer.initDatabase(init.settings())));
        System.exit(0);
      } catch (SettingsException e) {
        System.err.println("corral: " + e.getMessage());
        System.exit(2);
      } catch (Exception e) {
        System.err.println("corral: db init failed: " + e);
        System.exit(1);
      }
    }
    if (command instanceof Cli.TlsInit init) {
      try {
        var written = ClusterCertificates.write(init.dir(), init.names(), init.force());
        System.out.println("corral: wrote " + written.stream().map(Object::toString)
            .collect(java.util.stream.Collectors.joining(", ")) + " (the key only its owner may read); give every"
            + " node a copy with --cluster-tls-dir " + init.dir());
        System.exit(0);
      } catch (java.nio.file.FileAlreadyExistsException e) {
        System.err.println("corral: " + e.getFile());
        System.exit(2);
      } catch (Exception e) {
        System.err.println("corral: tls init failed: " + e);
        System.exit(1);
      }
    }
    CorralSettings settings = ((Cli.Serve) command).settings();
    settings.warnings().forEach(w -> System.err.println("corral: warning: " + w));
    try {
      LogOutputs.apply(settings.logs());
      CorralServer server = CorralServer.start(settings); // logs "listening on http://<host>:<port>"
      server.exitWhenStopped();
    } catch (SettingsException e) {
      System.err.println("corral: " + e.getMessage());
      System.exit(2);
    } catch (Exception e) {
      System.err.println("corral: failed to start: " + e);
      e.printStackTrace();
      System.exit(1);
    }
  }
}
