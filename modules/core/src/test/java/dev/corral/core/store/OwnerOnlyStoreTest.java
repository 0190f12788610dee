package dev.corral.core.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.key.ArtifactKey;
import dev.corral.core.upstream.Header;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.util.List;
import java.util.stream.Stream;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the store writes is readable by Corral's user only (issue 12, serving hygiene): cached
 * artifacts may come from repositories that need credentials, so another local user must not
 * read them from disk. Every file is {@code rw-------}, every directory {@code rwx------}, also
 * under a permissive umask, and a store directory left group-readable by an older version is
 * tightened when the store opens.
 */
class OwnerOnlyStoreTest {
  @TempDir Path dir;

  @Test
  void filesAndDirectoriesOfTheStoreAreOwnerOnly() throws IOException {
    assertTrue(OwnerOnly.posix(dir), "this test needs a POSIX file system");
    Path root = dir.resolve("store");
    DiskStore store = new DiskStore(root, Long.MAX_VALUE, Clock.systemUTC());
    try (BlobWriter w = store.newBlob(null)) {
      w.write(ByteString.fromString("secret artifact"));
      store.commit(ArtifactKey.of("repo", "http://upstream.example/a.tgz"), w,
          List.of(new Header("Content-Type", "application/octet-stream")));
    }
    // An unfinished blob: its temporary file is owner-only from its creation on.
    BlobWriter open = store.newBlob(null);
    open.write(ByteString.fromString("partial"));

    int files = 0;
    int dirs = 0;
    try (Stream<Path> all = Files.walk(root)) {
      for (Path p : (Iterable<Path>) all::iterator) {
        String perms = PosixFilePermissions.toString(Files.getPosixFilePermissions(p));
        if (Files.isDirectory(p)) {
          dirs++;
          assertEquals("rwx------", perms, p.toString());
        } else {
          files++;
          assertEquals("rw-------", perms, p.toString());
        }
      }
    }
    open.close();
    assertEquals(3, files, "blob, key record and the open temporary file");
    assertTrue(dirs >= 6, "store, blobs, keys, tmp and the fan-out directories: " + dirs);
  }

  @Test
  void aStoreDirectoryOpenToOthersIsTightenedOnOpen() throws IOException {
    Path root = dir.resolve("old-store");
    for (String sub : List.of("", "blobs", "keys", "tmp")) {
      Files.createDirectories(root.resolve(sub));
      Files.setPosixFilePermissions(root.resolve(sub), PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    new DiskStore(root, Long.MAX_VALUE, Clock.systemUTC());
    for (String sub : List.of("", "blobs", "keys", "tmp")) {
      String perms = PosixFilePermissions.toString(Files.getPosixFilePermissions(root.resolve(sub)));
      assertEquals("rwx------", perms, sub);
      assertFalse(perms.contains("r-x"), sub);
    }
  }
}
