package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The real {@code skopeo} (Debian's, 1.9) with a configuration of its own under a work dir, so
 * the machine's is never read: a trust policy accepting anything ({@code --policy}), a
 * registries.conf with no search registries ({@code --registries-conf} and
 * {@code CONTAINERS_REGISTRIES_CONF}), an empty {@code --registries.d}, an empty auth file
 * ({@code REGISTRY_AUTH_FILE}) and HOME, XDG_RUNTIME_DIR and TMPDIR in the work dir. Every image
 * name is fully qualified with a 127.0.0.1 registry, and TLS verification is off only for those.
 * Pushes an {@link OciImage} layout into a registry and copies an image out to a {@code dir:}.
 * Like {@link Podman} it still reads {@code /etc/containers/registries.conf.d} and root's
 * blob-info cache under {@code /var/lib/containers/cache}, which no flag of skopeo 1.9 moves.
 * Installs {@code skopeo} with apt-get when missing; never skips.
 */
final class Skopeo {
  static final Duration TIMEOUT = Duration.ofMinutes(5);

  private final Path work;
  private final Map<String, String> env = new TreeMap<>();
  private final List<String> global;
  private int copies;

  private Skopeo(Path work) throws IOException {
    this.work = work;
    Path conf = Files.createDirectories(work.resolve("conf"));
    Path policy = Files.writeString(conf.resolve("policy.json"), Podman.POLICY);
    Path registries = Files.writeString(conf.resolve("registries.conf"),
        "unqualified-search-registries = []\nshort-name-mode = \"enforcing\"\n");
    Path registriesD = Files.createDirectories(conf.resolve("registries.d"));
    Path auth = Files.writeString(conf.resolve("auth.json"), "{}\n");
    Path home = Files.createDirectories(work.resolve("home"));
    env.put("HOME", home.toString());
    env.put("XDG_RUNTIME_DIR", Files.createDirectories(work.resolve("run")).toString());
    env.put("XDG_CONFIG_HOME", home.resolve(".config").toString());
    env.put("TMPDIR", Files.createDirectories(work.resolve("tmp")).toString());
    env.put("CONTAINERS_REGISTRIES_CONF", registries.toString());
    env.put("REGISTRY_AUTH_FILE", auth.toString());
    global = List.of("skopeo", "--policy", policy.toString(), "--registries-conf", registries.toString(),
        "--registries.d", registriesD.toString(), "--tmpdir", env.get("TMPDIR"));
  }

  /** A skopeo with its configuration and scratch space under {@code work}. */
  static Skopeo create(Path work) throws IOException, InterruptedException {
    ClientCommand.require("skopeo", "skopeo", "the OCI end-to-end tests");
    return new Skopeo(Files.createDirectories(work));
  }

  /**
   * Pushes the layout's {@code tag} (a manifest or an index, with {@code --all} every instance) to
   * {@code destination}, a reference without transport such as {@code 127.0.0.1:PORT/corral/demo:v1}.
   */
  ClientCommand.Result push(OciImage image, String tag, String destination) throws IOException, InterruptedException {
    return run("copy", "--all", "--dest-tls-verify=false",
        "oci:" + image.layout() + ":" + tag, "docker://" + destination).ok();
  }

  /**
   * Pushes every tag of the layout (the image's tags, and the index's when there is one) to
   * {@code repository}, e.g. {@code 127.0.0.1:PORT/corral/demo}, under the same tags.
   */
  void push(OciImage image, String repository) throws IOException, InterruptedException {
    List<String> tags = new ArrayList<>(image.tags());
    image.indexTag().ifPresent(tags::add);
    for (String tag : tags) {
      push(image, tag, repository + ":" + tag);
    }
  }

  /**
   * Copies {@code source} (e.g. {@code 127.0.0.1:PORT/NAME/corral/demo:v1}, a registry or anything
   * that serves the registry API there) to a new {@code dir:} under the work dir and returns that
   * dir: {@code manifest.json} and one file per blob named by its hex digest.
   */
  Path copyToDir(String source) throws IOException, InterruptedException {
    Path out = work.resolve("copy-" + (++copies));
    run("copy", "--src-tls-verify=false", "docker://" + source, "dir:" + out).ok();
    return out;
  }

  /** Runs {@code skopeo <args>} with this kit's global flags and environment. */
  ClientCommand.Result run(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(global);
    command.addAll(List.of(args));
    return ClientCommand.run(work, env, TIMEOUT, command);
  }

  /**
   * A {@code dir:} copy holds the image's manifest, config and every layer byte for byte (the
   * compressed layer blobs as pushed, not recompressed).
   */
  static void assertSameBlobs(OciImage image, Path dir) throws IOException {
    assertEquals(-1L, Files.mismatch(image.blobPath(image.manifest().digest()), dir.resolve("manifest.json")),
        "manifest.json is the pushed manifest");
    for (OciImage.Blob blob : image.blobs().subList(1, image.blobs().size())) {
      Path copied = dir.resolve(blob.hex());
      assertTrue(Files.isRegularFile(copied), "no " + blob + " in " + dir);
      assertEquals(blob.size(), Files.size(copied), "size of " + blob.digest());
      assertEquals(-1L, Files.mismatch(image.blobPath(blob.digest()), copied), "bytes of " + blob.digest());
    }
  }
}
