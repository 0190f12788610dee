package dev.corral.server;

/**
 * A setting that cannot be used, found at start-up. The message always begins with the setting
 * as the user wrote it ({@code --http-port}, {@code CORRAL_MAX_SIZE},
 * {@code corral.repos.foo.connect-timeout}, {@code --repo "x=generic:..."}) followed by the
 * problem, and never contains a secret.
 */
public final class SettingsException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String setting;

  public SettingsException(String setting, String problem) {
    super(setting + ": " + problem);
    this.setting = setting;
  }

  /** The setting in the form the user wrote it: a flag, an environment variable or a HOCON path. */
  public String setting() {
    return setting;
  }
}
