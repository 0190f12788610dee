package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The real {@code podman} (Debian's, 4.3) pulling through a registry mirror, as root without
 * systemd: a store of its own under a work dir ({@code --root}, {@code --runroot},
 * {@code --storage-driver vfs}, {@code --tmpdir}), cgroupfs, no events, and its own
 * containers.conf, storage.conf and registries.conf ({@code CONTAINERS_CONF},
 * {@code CONTAINERS_STORAGE_CONF}, {@code CONTAINERS_REGISTRIES_CONF}), trust policy
 * ({@code --signature-policy}) and auth file ({@code REGISTRY_AUTH_FILE}); HOME, XDG_* and
 * TMPDIR point into the work dir, and inherited CONTAINER*, PODMAN*, REGISTRY_* and DOCKER_*
 * variables are dropped.
 *
 * <p>The registries.conf has no search registries and one {@code [[registry]]} per
 * {@link #mirror} call: a fake upstream prefix (e.g. {@code upstream.invalid}) whose own location
 * is {@link #NOWHERE}, a loopback port where nothing listens, and a {@code [[registry.mirror]]}
 * at the given {@code host:port[/NAME]}, {@code insecure = true}. Podman asks the mirror first,
 * replacing the prefix by the mirror location: {@code upstream.invalid/corral/demo:v1} through a
 * mirror {@code 127.0.0.1:PORT/NAME} is {@code GET /v2/NAME/corral/demo/manifests/v1}. When the
 * mirror fails, podman falls back to {@link #NOWHERE}, which refuses the connection, so the pull
 * fails (after podman 4.3's three retries a second apart) and never leaves loopback.
 *
 * <p>What it still reads of the machine, with no flag or variable in podman 4.3 to move it (none
 * of it leads off loopback): the drop-in dir {@code /etc/containers/registries.conf.d} (short-name
 * aliases, unused since every name here is fully qualified), {@code /etc/containers/registries.d}
 * and the local signature dir {@code /var/lib/containers/sigstore} (the images are unsigned), and
 * root's digest-knowledge cache {@code /var/lib/containers/cache/blob-info-cache-v1.boltdb} (no
 * image content; a fresh store has no layer it could point to). A failed pull is retried three
 * times a second apart: four rounds of requests to the mirror.
 * Installs {@code podman} with apt-get when missing; never skips.
 */
final class Podman implements AutoCloseable {
  static final Duration TIMEOUT = Duration.ofMinutes(5);
  /** The fallback location of every fake upstream: loopback, port 1, where nothing listens. */
  static final String NOWHERE = "127.0.0.1:1";
  /** A trust policy accepting anything (the images are unsigned and come from loopback). */
  static final String POLICY = "{\"default\":[{\"type\":\"insecureAcceptAnything\"}]}\n";
  private static final List<String> DROP = List.of("CONTAINER", "PODMAN", "REGISTRY_", "DOCKER_", "BUILDAH_");

  /** What {@code podman image inspect} says of an image: its ID (config digest), manifest digest and diff ids. */
  record Inspect(String id, String digest, List<String> diffIds) {}

  private final Path work;
  private final Path policy;
  private final Path registriesConf;
  private final Map<String, String> env = new TreeMap<>();
  private final StringBuilder registries = new StringBuilder();
  private Path store;
  /** The store's runroot: podman refuses one longer than 50 characters, so it is a short dir in /tmp. */
  private Path runroot;
  private int stores;
  private int saves;

  private Podman(Path work) throws IOException {
    this.work = work;
    Path conf = Files.createDirectories(work.resolve("conf"));
    policy = Files.writeString(conf.resolve("policy.json"), POLICY);
    registriesConf = conf.resolve("registries.conf");
    Path containersConf = Files.writeString(conf.resolve("containers.conf"), String.join("\n",
        "[containers]",
        "[engine]",
        "cgroup_manager = \"cgroupfs\"",
        "events_logger = \"none\"",
        "[network]",
        "network_config_dir = \"" + Files.createDirectories(work.resolve("networks")) + "\"",
        ""));
    Path home = Files.createDirectories(work.resolve("home"));
    env.put("HOME", home.toString());
    env.put("XDG_CONFIG_HOME", home.resolve(".config").toString());
    env.put("XDG_DATA_HOME", home.resolve(".local/share").toString());
    env.put("XDG_RUNTIME_DIR", Files.createDirectories(work.resolve("run")).toString());
    env.put("TMPDIR", Files.createDirectories(work.resolve("tmp")).toString());
    env.put("CONTAINERS_CONF", containersConf.toString());
    env.put("CONTAINERS_STORAGE_CONF", conf.resolve("storage.conf").toString());
    env.put("CONTAINERS_REGISTRIES_CONF", registriesConf.toString());
    env.put("REGISTRY_AUTH_FILE", Files.writeString(conf.resolve("auth.json"), "{}\n").toString());
    writeRegistries();
    freshStore();
  }

  /** A podman with its configuration and an empty store under {@code work}. */
  static Podman create(Path work) throws IOException, InterruptedException {
    ClientCommand.require("podman", "podman", "the OCI end-to-end tests");
    return new Podman(Files.createDirectories(work));
  }

  /**
   * Pulls of images under {@code prefix} (a fake upstream name such as {@code upstream.invalid})
   * go to the mirror at {@code mirrorLocation}, {@code host:port} or {@code host:port/NAME}, over
   * plain HTTP.
   */
  Podman mirror(String prefix, String mirrorLocation) throws IOException {
    registries.append("\n[[registry]]\nprefix = \"").append(prefix).append("\"\nlocation = \"").append(NOWHERE)
        .append("\"\n\n[[registry.mirror]]\nlocation = \"").append(mirrorLocation).append("\"\ninsecure = true\n");
    writeRegistries();
    return this;
  }

  private void writeRegistries() throws IOException {
    Files.writeString(registriesConf,
        "unqualified-search-registries = []\nshort-name-mode = \"enforcing\"\n" + registries);
  }

  /** The registries.conf in use. */
  Path registriesConf() {
    return registriesConf;
  }

  /**
   * Switches to a new, empty store (root and runroot) and deletes the old one: the next pull
   * has nothing to reuse.
   */
  void freshStore() throws IOException {
    Path old = store;
    Path oldRunroot = runroot;
    store = Files.createDirectories(work.resolve("store-" + (++stores)));
    runroot = Files.createTempDirectory(Path.of("/tmp"), "podman-run-");
    Files.writeString(Path.of(env.get("CONTAINERS_STORAGE_CONF")), String.join("\n",
        "[storage]",
        "driver = \"vfs\"",
        "graphroot = \"" + store.resolve("root") + "\"",
        "runroot = \"" + runroot + "\"",
        ""));
    if (old != null) {
      deleteTree(old);
      deleteTree(oldRunroot);
    }
  }

  /** Deletes the store (the work dir is the caller's). */
  @Override
  public void close() throws IOException {
    deleteTree(store);
    deleteTree(runroot);
  }

  /** {@code podman pull <reference>} (e.g. {@code upstream.invalid/corral/demo:v1}); not checked. */
  ClientCommand.Result pull(String reference, String... flags) throws IOException, InterruptedException {
    List<String> args = new ArrayList<>(List.of("pull", "--signature-policy", policy.toString()));
    args.addAll(Arrays.asList(flags));
    args.add(reference);
    return run(args);
  }

  /** What the store says of a pulled image. */
  Inspect inspect(String reference) throws IOException, InterruptedException {
    String out = run(List.of("image", "inspect", "--format",
        "{{.Id}}|{{.Digest}}|{{range .RootFS.Layers}}{{.}},{{end}}", reference)).ok().output().strip();
    String[] parts = out.substring(out.lastIndexOf('\n') + 1).split("\\|", -1);
    if (parts.length != 3) {
      throw new AssertionError("unexpected podman image inspect output: " + out);
    }
    List<String> diffIds = Arrays.stream(parts[2].split(",")).filter(s -> !s.isEmpty()).toList();
    return new Inspect(parts[0], parts[1], diffIds);
  }

  /** The image IDs in the store. */
  List<String> images() throws IOException, InterruptedException {
    return run(List.of("images", "--quiet", "--no-trunc")).ok().output().lines()
        .map(String::strip).filter(l -> l.startsWith("sha256:")).toList();
  }

  /**
   * {@code podman image save --uncompressed --format oci-dir}: an OCI layout whose layers are the
   * uncompressed tars as the store holds them (podman keeps no compressed blob to give back).
   */
  Path saveUncompressed(String reference) throws IOException, InterruptedException {
    Path out = work.resolve("saved-" + (++saves));
    run(List.of("image", "save", "--signature-policy", policy.toString(), "--uncompressed", "--format", "oci-dir",
        "-o", out.toString(), reference)).ok();
    return out;
  }

  /** Runs {@code podman <global flags> <args>} in this kit's environment. */
  ClientCommand.Result run(List<String> args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("podman",
        "--root", store.resolve("root").toString(), "--runroot", runroot.toString(),
        "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs", "--events-backend", "none",
        "--tmpdir", env.get("TMPDIR"), "--network-config-dir", work.resolve("networks").toString()));
    command.addAll(args);
    return ClientCommand.run(work, env, DROP, TIMEOUT, command);
  }

  /**
   * The saved layout holds the image's config and each layer's uncompressed tar, byte for byte
   * (compared with the image's gzip layers decompressed while reading), under its diff id.
   */
  /**
   * The store holds {@code image} under {@code reference}: its config as the ID, {@code digest}
   * (of the manifest, or of the index when the tag named one) as its digest, its layers byte for
   * byte.
   */
  void assertHolds(OciImage image, String reference, String digest) throws IOException, InterruptedException {
    Inspect inspect = inspect(reference);
    assertEquals(image.config().digest(), "sha256:" + inspect.id().replaceFirst("^sha256:", ""));
    assertEquals(digest, inspect.digest());
    assertEquals(image.layers().stream().map(OciImage.Layer::diffId).toList(), inspect.diffIds());
    assertTrue(!images().isEmpty(), "the store lists the image");
    assertSameLayers(image, saveUncompressed(reference));
  }

  static void assertSameLayers(OciImage image, Path saved) throws IOException {
    Path blobs = saved.resolve("blobs/sha256");
    assertEquals(-1L, Files.mismatch(image.blobPath(image.config().digest()), blobs.resolve(image.config().hex())),
        "the config " + image.config().digest());
    for (OciImage.Layer layer : image.layers()) {
      Path tar = blobs.resolve(layer.diffId().substring("sha256:".length()));
      assertTrue(Files.isRegularFile(tar), "no layer " + layer.diffId() + " in " + saved);
      assertEquals(layer.uncompressedSize(), Files.size(tar), "size of " + layer.diffId());
      try (InputStream expected = image.openUncompressed(layer); InputStream actual = Files.newInputStream(tar)) {
        assertEquals(-1L, firstMismatch(expected, actual), "bytes of layer " + layer.diffId());
      }
    }
  }

  /** The offset of the first differing byte of two streams (a shorter stream differs at its end), or -1. */
  static long firstMismatch(InputStream a, InputStream b) throws IOException {
    byte[] x = new byte[1 << 16];
    byte[] y = new byte[1 << 16];
    long offset = 0;
    while (true) {
      int n = a.readNBytes(x, 0, x.length);
      int m = b.readNBytes(y, 0, y.length);
      int diff = Arrays.mismatch(x, 0, n, y, 0, m);
      if (diff >= 0) {
        return offset + diff;
      }
      if (n == 0) {
        return -1;
      }
      offset += n;
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : (Iterable<Path>) paths.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    }
  }
}
