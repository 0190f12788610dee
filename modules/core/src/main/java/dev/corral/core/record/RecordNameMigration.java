package dev.corral.core.record;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.pekko.serialization.jackson.JacksonMigration;

/**
 * Reads key records written before {@link Record} had its own package, when it was
 * {@code dev.corral.core.fetch.FetchEntity$Record}: the database of a cluster keeps them, and
 * the fields are unchanged. Registered for that old name in core's {@code reference.conf}.
 */
public final class RecordNameMigration extends JacksonMigration {
  @Override
  public int currentVersion() {
    return 2;
  }

  @Override
  public String transformClassName(int fromVersion, String className) {
    return Record.class.getName();
  }

  @Override
  public JsonNode transform(int fromVersion, JsonNode json) {
    return json;
  }
}
