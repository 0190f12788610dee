package dev.corral.server;

/** {@code corral serve ...}: see {@link Cli} for the command line and {@code README.md} for the settings. */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    Cli.Command command = Cli.parse(args, System.getenv());
    if (command instanceof Cli.Help h) {
      System.out.println(h.text());
      System.exit(0);
    }
    if (command instanceof Cli.Invalid invalid) {
      System.err.println("corral: " + invalid.message());
      System.exit(invalid.exitCode());
    }
    CorralSettings settings = ((Cli.Serve) command).settings();
    settings.warnings().forEach(w -> System.err.println("corral: warning: " + w));
    try {
      CorralServer.start(settings); // logs "listening on http://HOST:PORT"
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
