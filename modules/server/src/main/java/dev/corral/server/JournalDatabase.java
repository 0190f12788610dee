package dev.corral.server;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.persistence.jdbc.testkit.javadsl.SchemaUtils;

/**
 * The database of the key records: PostgreSQL when {@code --journal} is set (a cluster shares
 * it), else an H2 file under the data directory. Pekko reaches it through Slick; the start-up
 * checks here use plain JDBC so that a wrong URL, password or table is one clear line naming
 * the setting instead of a pool retrying in the background.
 */
final class JournalDatabase {
  /** The columns the durable state store reads and writes (pekko-persistence-jdbc 1.1.x). */
  private static final String SCHEMA_PROBE =
      "SELECT global_offset, persistence_id, revision, state_payload, state_serial_id, state_serial_manifest,"
          + " tag, state_timestamp FROM durable_state WHERE 1 = 0";
  private static final int TIMEOUT_SECONDS = 10;
  /** User information before a PostgreSQL URL's host ({@code jdbc:postgresql://user:password@host/db}). */
  private static final Pattern USER_INFO = Pattern.compile("jdbc:postgresql://[^/?]*@");

  private final Optional<JournalSettings> journal;
  private final String url;
  private final String label;

  JournalDatabase(Optional<JournalSettings> journal, Path dataDir) {
    this.journal = journal;
    this.url = journal.map(JournalSettings::url).orElseGet(() -> h2Url(dataDir));
    this.label = journal.map(JournalSettings::label).orElse(Setting.DATA_DIR.flag());
  }

  /**
   * The longest key record (bytes) the embedded database keeps in its table row. The payload column
   * is a BLOB (pekko-persistence-jdbc's schema), which H2 keeps in its large-object store above 256
   * bytes, and a record is a few hundred: a replaced record's removal then waited for H2's cleaner
   * thread, which every commit meanwhile handed a task, refused with an exception while it was busy
   * (docs/benchmarks.md, "The embedded journal's records in their rows"). A database setting H2
   * keeps; records already in the large-object store stay readable there.
   */
  static final int H2_RECORD_IN_ROW = 4096;

  private static String h2Url(Path dataDir) {
    return "jdbc:h2:file:" + dataDir.resolve("db").resolve("corral") + ";DB_CLOSE_ON_EXIT=FALSE;DATABASE_TO_UPPER=false"
        + ";MAX_LENGTH_INPLACE_LOB=" + H2_RECORD_IN_ROW;
  }

  /**
   * The Slick settings for pekko-persistence-jdbc. One database for the key records (durable
   * state); the journal's settings point at it too because the schema tool reads them (Corral
   * writes no events).
   */
  Config pekkoConfig() {
    Config slick = journal.isPresent()
        ? ConfigFactory.parseString("""
            profile = "slick.jdbc.PostgresProfile$"
            db { driver = "org.postgresql.Driver", numThreads = 8, maxConnections = 8, minConnections = 1 }
            """)
            .withValue("db.user", ConfigValueFactory.fromAnyRef(journal.get().user().orElse("")))
            .withValue("db.password", ConfigValueFactory.fromAnyRef(journal.get().password().orElse("")))
        : ConfigFactory.parseString("""
            profile = "slick.jdbc.H2Profile$"
            db { driver = "org.h2.Driver", user = "sa", password = "", numThreads = 4, maxConnections = 4, minConnections = 1 }
            """);
    slick = slick.withValue("db.url", ConfigValueFactory.fromAnyRef(url));
    return ConfigFactory.empty()
        .withValue("jdbc-durable-state-store.slick", slick.root())
        .withValue("pekko-persistence-jdbc.shared-databases.slick", slick.root())
        .withValue("jdbc-journal.use-shared-db", ConfigValueFactory.fromAnyRef("slick"))
        .withValue("jdbc-snapshot-store.use-shared-db", ConfigValueFactory.fromAnyRef("slick"))
        .withValue("jdbc-read-journal.use-shared-db", ConfigValueFactory.fromAnyRef("slick"));
  }

  /** Fails with the setting's name when PostgreSQL cannot be reached or refuses the credentials. */
  void checkConnection() {
    if (journal.isEmpty()) {
      return; // the embedded database is opened (and created) by Slick
    }
    if (USER_INFO.matcher(url).lookingAt()) {
      // The driver would take "user:password@host" for a host name and look it up (the password in
      // a DNS query), then fail with the URL in its message.
      throw new SettingsException(label, shown(url) + ": the PostgreSQL driver takes no user or password before"
          + " the host; give them with " + Setting.JOURNAL_USER.flag() + " and " + Setting.JOURNAL_PASSWORD.flag()
          + " (or " + Setting.JOURNAL_PASSWORD_FILE.flag() + ")");
    }
    try (Connection c = connect()) {
      c.isValid(TIMEOUT_SECONDS);
    } catch (SQLException e) {
      throw new SettingsException(label, "cannot connect to " + shown(url) + ": " + oneLine(e, url));
    }
  }

  /**
   * Creates the tables that are missing (idempotent: existing tables are left alone), then checks
   * that the key records' table has the columns Corral needs.
   */
  void createTables(ActorSystem<?> system) throws Exception {
    try {
      SchemaUtils.createIfNotExists(system).toCompletableFuture().get(60, TimeUnit.SECONDS);
    } catch (ExecutionException | TimeoutException e) {
      // Statements that fail are skipped by the tool; whatever is still wrong shows in checkSchema.
    }
    // The URL Pekko really uses: raw Pekko settings in the config file may point it elsewhere.
    String effective = system.settings().config().getString("jdbc-durable-state-store.slick.db.url");
    checkSchema(effective);
  }

  /** Fails with the setting's name when {@code durable_state} is missing or lacks a column. */
  void checkSchema() {
    checkSchema(url);
  }

  private void checkSchema(String url) {
    try (Connection c = connect(url); Statement s = c.createStatement()) {
      s.setQueryTimeout(TIMEOUT_SECONDS);
      s.executeQuery(SCHEMA_PROBE).close();
    } catch (SQLException e) {
      throw new SettingsException(label, "the database at " + shown(url) + " does not have the key records' table"
          + " Corral needs (" + oneLine(e, url) + "); `corral db init` creates it in an empty database");
    }
  }

  /** The database's URL with its secrets: for the driver and Slick, never for a message. */
  String url() {
    return url;
  }

  /**
   * A URL of the database as a message or log line may show it: its user information and query
   * (where {@code password=} may sit) replaced by {@code ***}.
   */
  static String shown(String url) {
    return SettingValues.withoutSecrets(url);
  }

  private Connection connect() throws SQLException {
    return connect(url);
  }

  private Connection connect(String url) throws SQLException {
    Properties props = new Properties();
    if (journal.isPresent()) {
      journal.get().user().ifPresent(u -> props.setProperty("user", u));
      journal.get().password().ifPresent(p -> props.setProperty("password", p));
      props.setProperty("connectTimeout", String.valueOf(TIMEOUT_SECONDS));
      props.setProperty("loginTimeout", String.valueOf(TIMEOUT_SECONDS));
      props.setProperty("socketTimeout", String.valueOf(TIMEOUT_SECONDS * 3));
      props.setProperty("ApplicationName", "corral");
    } else {
      props.setProperty("user", "sa");
      props.setProperty("password", "");
    }
    return DriverManager.getConnection(url, props);
  }

  /**
   * The driver's message on one line, without the secrets it may repeat (DriverManager's "No
   * suitable driver found for URL" names the URL whole): {@code url} as {@link #shown} shows it,
   * and the password of the URL or of the password setting replaced by {@code ***}.
   */
  private String oneLine(SQLException e, String url) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    message = message.replace(url, shown(url));
    for (String secret : secrets(url)) {
      message = message.replace(secret, "***");
    }
    return message.replaceAll("\\s*\\R\\s*", " ").trim();
  }

  /** The passwords {@code url} is reached with: the password setting's, and any in the URL. */
  private List<String> secrets(String url) {
    List<String> secrets = new ArrayList<>();
    journal.flatMap(JournalSettings::password).ifPresent(secrets::add);
    Matcher info = USER_INFO.matcher(url);
    if (info.lookingAt()) {
      String userInfo = url.substring("jdbc:postgresql://".length(), info.end() - 1);
      secrets.add(userInfo);
      int colon = userInfo.indexOf(':');
      if (colon >= 0) {
        secrets.add(userInfo.substring(colon + 1));
      }
    }
    int query = url.indexOf('?');
    if (query >= 0) {
      for (String parameter : url.substring(query + 1).split("&")) {
        if (parameter.regionMatches(true, 0, "password=", 0, "password=".length())) {
          String value = parameter.substring("password=".length());
          secrets.add(value);
          secrets.add(URLDecoder.decode(value, StandardCharsets.UTF_8));
        }
      }
    }
    secrets.removeIf(String::isEmpty);
    return secrets;
  }
}
