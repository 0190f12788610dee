package dev.corral.server;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The command line as {@code Main} sees it: a subcommand and its options, parsed into a
 * {@link Command}. Nothing is printed and nothing exits here; {@code Main} does:
 *
 * <pre>{@code
 * Cli.Command command = Cli.parse(args, System.getenv());
 * if (command instanceof Cli.Serve serve) { ...start with serve.settings()... }
 * else if (command instanceof Cli.Help help) { System.out.print(help.text()); }
 * else if (command instanceof Cli.Invalid invalid) {
 *   System.err.println(invalid.message());
 *   System.exit(invalid.exitCode());   // 2
 * }
 * }</pre>
 */
public final class Cli {
  /** The exit code for bad input (usage errors and bad settings). */
  public static final int BAD_INPUT = 2;

  private static final List<String> COMMANDS = List.of("serve", "db init", "tls init", "version", "help");

  private Cli() {}

  /** What the command line asks for. */
  public sealed interface Command permits Serve, DbInit, TlsInit, Version, Help, Invalid {
    /** The process's exit code once the command has been carried out (for Serve: a clean stop). */
    default int exitCode() {
      return 0;
    }
  }

  /** {@code corral serve [options]}: run a node with these settings. */
  public record Serve(CorralSettings settings) implements Command {}

  /**
   * {@code corral db init [options]}: create the tables in the configured database ({@code
   * --journal}, else the embedded one under {@code --data-dir}) and exit; the same options as
   * serve are accepted, so one environment or config file serves both.
   */
  public record DbInit(CorralSettings settings) implements Command {}

  /**
   * {@code corral tls init DIR [--name NAME]... [--force]}: write a fresh cluster CA and a node
   * certificate every node may share into {@code DIR} ({@link ClusterCertificates}).
   */
  public record TlsInit(java.nio.file.Path dir, List<String> names, boolean force) implements Command {}

  /** {@code corral version}, {@code --version}: print {@code text} ({@link CorralVersion}) to stdout, exit 0. */
  public record Version(String text) implements Command {}

  /** {@code corral help}, {@code --help}, {@code -h}: print {@code text} to stdout, exit 0. */
  public record Help(String text) implements Command {}

  /** Bad input: print {@code message} to stderr and exit with {@link #BAD_INPUT}. */
  public record Invalid(String message) implements Command {
    @Override
    public int exitCode() {
      return BAD_INPUT;
    }
  }

  /**
   * Parses the whole command line.
   *
   * @param env the environment (for the {@code CORRAL_...} settings)
   */
  public static Command parse(String[] args, Map<String, String> env) {
    if (args.length == 0) {
      return new Invalid("missing command (" + String.join(", ", COMMANDS) + ")\n" + usageLine());
    }
    String command = args[0];
    String[] options = Arrays.copyOfRange(args, 1, args.length);
    switch (command) {
      case "help", "--help", "-h":
        return new Help(helpText());
      case "version", "--version":
        return new Version(CorralVersion.text());
      case "serve":
        if (Arrays.asList(options).contains("--help") || Arrays.asList(options).contains("-h")) {
          return new Help(helpText());
        }
        try {
          return new Serve(CorralSettings.load(options, env));
        } catch (SettingsException e) {
          return new Invalid(e.getMessage());
        }
      case "db":
        if (options.length == 0 || !options[0].equals("init")) {
          return new Invalid("unknown command " + SettingValues.quoted(String.join(" ", args))
              + " (known: db init)\n" + usageLine());
        }
        String[] dbOptions = Arrays.copyOfRange(options, 1, options.length);
        if (Arrays.asList(dbOptions).contains("--help") || Arrays.asList(dbOptions).contains("-h")) {
          return new Help(helpText());
        }
        try {
          return new DbInit(CorralSettings.load(dbOptions, env));
        } catch (SettingsException e) {
          return new Invalid(e.getMessage());
        }
      case "tls":
        return tlsInit(args, options);
      default:
        return new Invalid(
            "unknown command " + SettingValues.quoted(command)
                + " (known: " + String.join(", ", COMMANDS) + ")\n" + usageLine());
    }
  }

  private static Command tlsInit(String[] args, String[] options) {
    if (options.length == 0 || !options[0].equals("init")) {
      return new Invalid("unknown command " + SettingValues.quoted(String.join(" ", args))
          + " (known: tls init)\n" + usageLine());
    }
    java.nio.file.Path dir = null;
    List<String> names = new java.util.ArrayList<>();
    boolean force = false;
    for (int i = 1; i < options.length; i++) {
      String o = options[i];
      if (o.equals("--help") || o.equals("-h")) {
        return new Help(helpText());
      } else if (o.equals("--force")) {
        force = true;
      } else if (o.equals("--name") && i + 1 < options.length) {
        names.add(options[++i]);
      } else if (o.startsWith("--name=")) {
        names.add(o.substring("--name=".length()));
      } else if (o.startsWith("-")) {
        return new Invalid(SettingValues.quoted(o) + ": unknown option of tls init (--name NAME, --force)");
      } else if (dir == null) {
        try {
          dir = SettingSources.path(o, "tls init DIR");
        } catch (SettingsException e) {
          return new Invalid(e.getMessage());
        }
      } else {
        return new Invalid(SettingValues.quoted(o) + ": tls init takes one directory");
      }
    }
    if (dir == null) {
      return new Invalid("tls init needs a directory: corral tls init DIR [--name NAME]... [--force]");
    }
    try {
      ClusterCertificates.subjectNames(names);
    } catch (ClusterCertificates.BadName e) {
      return new Invalid("--name: " + e.getMessage());
    }
    return new TlsInit(dir, List.copyOf(names), force);
  }

  /** {@code text} in lines of at most about 80 columns, each starting with {@code indent}. */
  private static String wrap(String text, String indent) {
    StringBuilder out = new StringBuilder();
    StringBuilder line = new StringBuilder(indent);
    for (String word : text.split(" ")) {
      if (line.length() > indent.length() && line.length() + 1 + word.length() > 80) {
        out.append(line).append('\n');
        line = new StringBuilder(indent);
      }
      if (line.length() > indent.length()) {
        line.append(' ');
      }
      line.append(word);
    }
    return out.append(line).append('\n').toString();
  }

  private static String usageLine() {
    return "usage: corral serve [options] | corral db init [options] | corral tls init DIR [--name NAME]..."
        + " [--force] | corral version | corral help";
  }

  /** The {@code --help} text, generated from {@link Setting} and {@link RepoSetting}. */
  public static String helpText() {
    StringBuilder out = new StringBuilder();
    out.append("Corral: a clustered pull-through cache for package registries.\n\n");
    out.append("Usage:\n");
    out.append("  corral serve [options]   run a node\n");
    out.append("  corral db init [options] create the tables in the database (--journal) and exit\n");
    out.append("  corral tls init DIR [--name NAME]... [--force]\n");
    out.append("                           write a new cluster CA and a node certificate all nodes\n");
    out.append("                           may share (ca.crt, tls.crt, tls.key) for --cluster-tls-dir;\n");
    out.append("                           names: localhost, 127.0.0.1, ::1 and each --name\n");
    out.append("  corral version           print Corral's and Java's versions (also --version)\n");
    out.append("  corral help              show this text\n\n");
    out.append("Options of serve (each also as environment variable and HOCON setting;\n");
    out.append("precedence: command line > environment > --config file > built-in default):\n\n");
    for (Setting s : Setting.values()) {
      out.append("  ").append(s.usage()).append('\n');
      out.append(wrap(s.description(), "      "));
      out.append("      env ").append(s.env());
      s.path().ifPresent(p -> out.append(", HOCON ").append(p));
      s.defaultValue().ifPresent(d -> out.append(", default ").append(d));
      out.append('\n');
    }
    out.append("\nPer repository, in HOCON only: corral.repos.NAME.KEY, defaults from\n");
    out.append("corral.repo-defaults.KEY:\n\n");
    for (RepoSetting r : RepoSetting.values()) {
      out.append("  ").append(r.key());
      r.defaultText().ifPresent(d -> out.append(" (default ").append(d).append(')'));
      out.append('\n').append(wrap(r.description(), "      "));
    }
    out.append("\nIn the environment only:\n\n");
    out.append("  CORRAL_LOG_LEVEL\n");
    out.append(wrap("Level of the application log: ERROR, WARN, INFO, DEBUG or TRACE (default INFO). The"
        + " access log is not affected", "      "));
    out.append("  JAVA_OPTS, CORRAL_CDS\n");
    out.append(wrap("Read by the ./corral launcher: the JVM flags (replacing its defaults), and off to start"
        + " without the class data sharing archive (default on)", "      "));
    out.append("\nDurations need a unit (500ms, 5s, 2m); sizes are bytes or KiB, MiB, GiB, TiB.\n");
    out.append("Repository names match ").append(SettingValues.REPO_NAME.pattern())
        .append("; a --repo URL is everything after the ':' that ends TYPE.\n");
    return out.toString();
  }
}
