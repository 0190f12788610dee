package dev.corral.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigParseOptions;
import com.typesafe.config.ConfigValue;
import com.typesafe.config.ConfigValueType;
import java.util.Optional;

/** The built-in defaults: {@code corral-defaults.conf} on the class path, the lowest precedence. */
final class BuiltInDefaults {
  static final String RESOURCE = "corral-defaults.conf";

  static final Config CONFIG =
      ConfigFactory.parseResources(
          BuiltInDefaults.class.getClassLoader(),
          RESOURCE,
          ConfigParseOptions.defaults().setAllowMissing(false));

  private BuiltInDefaults() {}

  /** The default at {@code path} as a user would write it, if there is a single value there. */
  static Optional<String> text(String path) {
    if (path == null || !CONFIG.hasPath(path)) {
      return Optional.empty();
    }
    ConfigValue value = CONFIG.getValue(path);
    if (value.valueType() == ConfigValueType.OBJECT || value.valueType() == ConfigValueType.LIST) {
      return Optional.empty();
    }
    return Optional.of(String.valueOf(value.unwrapped()));
  }
}
