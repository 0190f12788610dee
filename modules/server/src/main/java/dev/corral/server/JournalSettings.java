package dev.corral.server;

import java.util.Objects;
import java.util.Optional;

/**
 * A shared PostgreSQL database for the key records (a cluster). Without one the node uses an
 * embedded H2 database under its data directory.
 *
 * @param url {@code jdbc:postgresql://HOST:PORT/DB}; shown by {@link #toString()} without its query
 *     (which may carry {@code password=})
 * @param password from {@code --journal-password} or the file of {@code --journal-password-file};
 *     never shown by {@link #toString()}
 * @param label how the user named the URL ({@code --journal}, {@code CORRAL_JOURNAL} or the HOCON
 *     path), for start-up errors about the database
 */
public record JournalSettings(String url, Optional<String> user, Optional<String> password, String label) {
  public JournalSettings {
    Objects.requireNonNull(url, "url");
    Objects.requireNonNull(user, "user");
    Objects.requireNonNull(password, "password");
    Objects.requireNonNull(label, "label");
  }

  @Override
  public String toString() {
    return "JournalSettings[url=" + SettingValues.withoutSecrets(url) + ", user=" + user.orElse("none")
        + ", password=" + (password.isPresent() ? "***" : "none") + "]";
  }
}
