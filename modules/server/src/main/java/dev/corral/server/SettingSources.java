package dev.corral.server;

import static dev.corral.server.SettingValues.quoted;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigUtil;
import com.typesafe.config.ConfigValueFactory;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The command line and the environment turned into HOCON overlays on the {@code corral} paths,
 * remembering for each path how the user wrote it (a flag or a variable) so that errors found
 * later name it that way.
 */
final class SettingSources {
  /**
   * A parsed {@code NAME=TYPE:URL}, or {@code NAME=group:M1,M2} (then {@code url} is the member
   * list as written); {@code label} is how it was given, for messages.
   */
  record RepoSpec(String name, String type, String url, String label) {
    static RepoSpec parse(String spec, String label) {
      int eq = spec.indexOf('=');
      int colon = eq < 0 ? -1 : spec.indexOf(':', eq + 1);
      if (eq < 0 || colon < 0) {
        throw new SettingsException(label, "expected NAME=TYPE:URL");
      }
      // URL is everything after the first ':' following TYPE, so it may contain ':' itself.
      String name = spec.substring(0, eq);
      String type = spec.substring(eq + 1, colon);
      String url = spec.substring(colon + 1);
      String problem = SettingValues.repoNameProblem(name);
      if (problem == null) {
        problem = SettingValues.repoTypeProblem(type);
        if (problem != null) {
          problem += "; expected NAME=TYPE:URL";
        }
      }
      if (problem == null && !type.equals(RepoSettings.GROUP)) {
        problem = SettingValues.urlProblem(url);
      }
      if (problem != null) {
        throw new SettingsException(label, problem);
      }
      return new RepoSpec(name, type, url, label);
    }
  }

  final Config commandLine;
  final Config environment;
  /** HOCON path to the flag or variable it came from; the command line's entry wins. */
  final Map<String, String> labels;
  final Optional<Path> configFile;
  /** How the config file was named: {@code --config} or {@code CORRAL_CONFIG}. */
  final String configFileLabel;
  final List<String> warnings;

  private SettingSources(
      Config commandLine,
      Config environment,
      Map<String, String> labels,
      Optional<Path> configFile,
      String configFileLabel,
      List<String> warnings) {
    this.commandLine = commandLine;
    this.environment = environment;
    this.labels = labels;
    this.configFile = configFile;
    this.configFileLabel = configFileLabel;
    this.warnings = warnings;
  }

  static SettingSources read(String[] args, Map<String, String> env) {
    Map<Setting, String> flags = new EnumMap<>(Setting.class);
    List<RepoSpec> flagRepos = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (!arg.startsWith("--")) {
        throw new SettingsException(quoted(SettingValues.withoutSecrets(arg)), "unexpected argument (options start with --; see corral help)");
      }
      int eq = arg.indexOf('=');
      String flag = eq > 0 ? arg.substring(0, eq) : arg;
      String value = eq > 0 ? arg.substring(eq + 1) : null;
      Setting setting =
          Setting.byFlag(flag)
              .orElseThrow(() -> new SettingsException(flag, "unknown option (see corral help)"));
      if (value == null && setting.isSwitch()) {
        value = "true";
      } else if (value == null) {
        if (i + 1 >= args.length || args[i + 1].startsWith("--")) {
          throw new SettingsException(flag, "missing value (" + setting.valueName() + ")");
        }
        value = args[++i];
      }
      if (value.isBlank()) {
        throw new SettingsException(flag, "empty value (" + setting.valueName() + ")");
      }
      if (setting.repeatable()) {
        flagRepos.add(RepoSpec.parse(value, flag + " " + quoted(SettingValues.withoutSecrets(value))));
      } else {
        flags.put(setting, value); // given twice: the last one wins, as usual for flags
      }
    }

    Overlay fromEnv = new Overlay();
    Overlay fromFlags = new Overlay();
    Optional<Path> configFile = Optional.empty();
    String configFileLabel = null;
    for (Setting setting : Setting.values()) {
      String value = env.get(setting.env());
      if (value == null || value.isBlank()) {
        continue; // an empty variable counts as unset (compose files often leave them empty)
      }
      if (setting == Setting.CONFIG) {
        configFile = Optional.of(path(value, setting.env()));
        configFileLabel = setting.env();
      } else if (setting.repeatable()) {
        // A group's members are comma-separated too: a piece without '=' after NAME=group:...
        // is one more member of that group.
        List<String> pieces = new ArrayList<>();
        for (String piece : value.trim().split("[,\\s]+")) {
          int last = pieces.size() - 1;
          if (last >= 0 && piece.indexOf('=') < 0 && pieces.get(last).contains("=" + RepoSettings.GROUP + ":")) {
            pieces.set(last, pieces.get(last) + "," + piece);
          } else {
            pieces.add(piece);
          }
        }
        List<RepoSpec> specs = new ArrayList<>();
        for (String spec : pieces) {
          specs.add(RepoSpec.parse(spec, setting.env() + " " + quoted(SettingValues.withoutSecrets(spec))));
        }
        fromEnv.putRepos(specs);
      } else {
        fromEnv.put(setting.path().orElseThrow(), value, setting.env());
      }
    }
    for (Map.Entry<Setting, String> e : flags.entrySet()) {
      Setting setting = e.getKey();
      if (setting == Setting.CONFIG) {
        configFile = Optional.of(path(e.getValue(), setting.flag()));
        configFileLabel = setting.flag();
      } else {
        fromFlags.put(setting.path().orElseThrow(), e.getValue(), setting.flag());
      }
    }
    fromFlags.putRepos(flagRepos);

    Map<String, String> labels = new HashMap<>(fromEnv.labels);
    labels.putAll(fromFlags.labels);
    return new SettingSources(
        fromFlags.config, fromEnv.config, Map.copyOf(labels), configFile, configFileLabel,
        unknownVariables(env));
  }

  static Path path(String text, String label) {
    try {
      return Path.of(text);
    } catch (InvalidPathException e) {
      throw new SettingsException(label, quoted(text) + " is not a path: " + e.getReason());
    }
  }

  /**
   * CORRAL_ variables read outside the settings, listed by {@code corral help}: the log level
   * (logback.xml) and the launcher's switch for its class data sharing archive.
   */
  static final List<String> ENVIRONMENT_ONLY = List.of("CORRAL_LOG_LEVEL", "CORRAL_CDS");

  /** CORRAL_ variables that are not settings: probably typos, but other tools may set some. */
  private static List<String> unknownVariables(Map<String, String> env) {
    Set<String> known = Arrays.stream(Setting.values()).map(Setting::env)
        .collect(Collectors.toCollection(java.util.HashSet::new));
    known.addAll(ENVIRONMENT_ONLY);
    List<String> warnings = new ArrayList<>();
    for (String name : new TreeSet<>(env.keySet())) {
      if (name.startsWith("CORRAL_") && !known.contains(name)) {
        warnings.add(name + " is set but is not a Corral setting (see corral help)");
      }
    }
    return warnings;
  }

  private static final class Overlay {
    Config config = ConfigFactory.empty();
    final Map<String, String> labels = new HashMap<>();

    void put(String path, String value, String label) {
      config = config.withValue(path, ConfigValueFactory.fromAnyRef(value, label));
      labels.put(path, label);
    }

    void putRepos(List<RepoSpec> specs) {
      Map<String, RepoSpec> byName = new LinkedHashMap<>();
      for (RepoSpec spec : specs) {
        RepoSpec earlier = byName.putIfAbsent(spec.name(), spec);
        if (earlier != null) {
          throw new SettingsException(spec.label(), "repository " + quoted(spec.name()) + " is given twice");
        }
        put(ConfigUtil.joinPath("corral", "repos", spec.name(), "type"), spec.type(), spec.label());
        if (spec.type().equals(RepoSettings.GROUP)) {
          String path = ConfigUtil.joinPath("corral", "repos", spec.name(), RepoSetting.MEMBERS.key());
          List<String> members = Arrays.stream(spec.url().split(",", -1)).map(String::trim).toList();
          config = config.withValue(path, ConfigValueFactory.fromIterable(members, spec.label()));
          labels.put(path, spec.label());
        } else {
          put(ConfigUtil.joinPath("corral", "repos", spec.name(), "url"), spec.url(), spec.label());
        }
      }
    }
  }
}
