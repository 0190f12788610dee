package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code --data-dir} the node cannot use (a file, under a file, not writable) stops the start
 * with one line naming the setting (a {@link SettingsException}: exit code 2), before anything
 * binds, and leaves what is at the path as it was.
 */
class DataDirTest {
  @TempDir Path dir;

  private static CorralSettings settings(Path dataDir) {
    return CorralSettings.load(new String[] {"--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0",
        "--peer-port", "0", "--data-dir", dataDir.toString(), "--repo", "up=generic:http://127.0.0.1:1/"}, Map.of());
  }

  private static SettingsException refused(Path dataDir) {
    CorralSettings settings = settings(dataDir);
    SettingsException e = assertThrows(SettingsException.class, () -> CorralServer.start(settings).close());
    assertEquals("--data-dir", e.setting());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    return e;
  }

  @Test
  void aFileIsNotADataDirectoryAndIsLeftAsItWas() throws Exception {
    Path file = dir.resolve("data");
    byte[] content = "someone's file\n".getBytes(StandardCharsets.UTF_8);
    Files.write(file, content);
    assertEquals("--data-dir: " + file + " is not a directory", refused(file).getMessage());
    assertArrayEquals(content, Files.readAllBytes(file));
  }

  @Test
  void aDataDirectoryUnderAFileCannotBeCreated() throws Exception {
    Path file = dir.resolve("file");
    Files.writeString(file, "x");
    Path data = file.resolve("data");
    assertEquals("--data-dir: cannot create " + data + ": " + file + " is not a directory", refused(data).getMessage());
    assertEquals("x", Files.readString(file));
  }

  @Test
  void corralDbInitSaysTheSame() throws Exception {
    Path file = dir.resolve("data");
    Files.writeString(file, "x");
    SettingsException e = assertThrows(SettingsException.class, () -> CorralServer.initDatabase(settings(file)));
    assertEquals("--data-dir: " + file + " is not a directory", e.getMessage());
  }

  @Test
  void aDataDirectoryThatCannotBeCreatedOrWrittenForWantOfPermission() throws Exception {
    Path readOnly = Files.createDirectory(dir.resolve("read-only"));
    Path existing = Files.createDirectory(readOnly.resolve("existing"));
    Files.setPosixFilePermissions(existing, PosixFilePermissions.fromString("r-xr-xr-x"));
    Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("r-xr-xr-x"));
    try {
      assumeFalse(Files.isWritable(readOnly), "file permissions do not bind this user (root)");
      Path data = readOnly.resolve("data");
      assertEquals("--data-dir: cannot create " + data + ": permission denied", refused(data).getMessage());
      assertEquals("--data-dir: " + existing + " is not writable", refused(existing).getMessage());
    } finally {
      Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("rwxr-xr-x"));
      Files.setPosixFilePermissions(existing, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
  }
}
