package dev.corral.core.store;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/**
 * Permissions of what the store creates: directories {@code 0700} and files {@code 0600}, so that
 * only the user Corral runs as can read cached artifacts (which may come from repositories that
 * need credentials). On a file system without POSIX permissions nothing is set.
 */
final class OwnerOnly {
  private static final Set<PosixFilePermission> DIR = PosixFilePermissions.fromString("rwx------");
  private static final Set<PosixFilePermission> FILE = PosixFilePermissions.fromString("rw-------");

  private OwnerOnly() {}

  static boolean posix(Path path) {
    return path.getFileSystem().supportedFileAttributeViews().contains("posix");
  }

  /** Attributes for a new file under {@code path}'s file system. */
  static FileAttribute<?>[] file(Path path) {
    return posix(path) ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(FILE)} : new FileAttribute<?>[0];
  }

  /** Creates {@code dir} and its missing parents, each {@code 0700}. */
  static void createDirectories(Path dir) throws IOException {
    // Asked twice per commit, almost always of a directory already there: createDirectories alone
    // tries to create it and catches the exception the JDK builds for "already exists" (with its
    // stack trace), which cost more CPU than a stat.
    if (Files.isDirectory(dir)) {
      return;
    }
    if (posix(dir)) {
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(DIR));
    } else {
      Files.createDirectories(dir);
    }
  }

  /** Takes group and other access off an existing directory (one made by an older version). */
  static void tighten(Path dir) throws IOException {
    if (posix(dir) && !Files.getPosixFilePermissions(dir).equals(DIR)) {
      Files.setPosixFilePermissions(dir, DIR);
    }
  }
}
