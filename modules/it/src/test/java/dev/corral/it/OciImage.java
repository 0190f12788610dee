package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.DigestOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * A small container image written by the test as an OCI image layout directory ({@code oci-layout},
 * {@code index.json}, {@code blobs/sha256/...}): gzip-compressed tar layers of files with
 * deterministic pseudo-random content (streamed to disk, so a 256 MiB layer never sits in memory),
 * an image config whose {@code rootfs.diff_ids} are the digests of the uncompressed tars, and an
 * OCI manifest, tagged in the layout's {@code index.json}. Optionally an OCI index (multi-platform:
 * linux/amd64 and linux/arm64 manifests over the same layers) under a tag of its own. Every blob's
 * digest and size is recorded so tests can compare what a client pulled. Nothing is downloaded.
 */
final class OciImage {
  static final String MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json";
  static final String INDEX_TYPE = "application/vnd.oci.image.index.v1+json";
  static final String CONFIG_TYPE = "application/vnd.oci.image.config.v1+json";
  static final String LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip";

  /** One blob of the layout: {@code digest} is {@code sha256:<hex>}. */
  record Blob(String mediaType, String digest, long size) {
    String hex() {
      return digest.substring(digest.indexOf(':') + 1);
    }

    /** The OCI descriptor JSON (no platform). */
    String descriptor() {
      return "{\"mediaType\":\"" + mediaType + "\",\"digest\":\"" + digest + "\",\"size\":" + size + "}";
    }
  }

  /** A layer: its compressed blob, the digest of its uncompressed tar (the diff id) and that tar's size. */
  record Layer(Blob blob, String diffId, long uncompressedSize, List<Long> fileSizes) {}

  private final Path layout;
  private final List<Layer> layers;
  private final Blob config;
  private final Blob manifest;
  private final List<String> tags;
  private final Blob index;
  private final String indexTag;
  private final List<Blob> indexed;

  private OciImage(Path layout, List<Layer> layers, Blob config, Blob manifest, List<String> tags,
      Blob index, String indexTag, List<Blob> indexed) {
    this.layout = layout;
    this.layers = List.copyOf(layers);
    this.config = config;
    this.manifest = manifest;
    this.tags = List.copyOf(tags);
    this.index = index;
    this.indexTag = indexTag;
    this.indexed = List.copyOf(indexed);
  }

  static Builder builder() {
    return new Builder();
  }

  /** What to write: layers (each a list of file sizes), tags, the seed and whether to add an index. */
  static final class Builder {
    private final List<long[]> layers = new ArrayList<>();
    private final List<String> tags = new ArrayList<>();
    private long seed = 1;
    private String indexTag;

    private Builder() {}

    /** Adds a layer holding one file per size (in bytes), in order. */
    Builder layer(long... fileSizes) {
      if (fileSizes.length == 0) {
        throw new IllegalArgumentException("a layer needs at least one file");
      }
      layers.add(fileSizes.clone());
      return this;
    }

    /** A tag of the image manifest in the layout (the first one added is {@link #tag()}). */
    Builder tag(String tag) {
      tags.add(tag);
      return this;
    }

    /** Seed of the file contents: the same builder with the same seed writes the same bytes. */
    Builder seed(long seed) {
      this.seed = seed;
      return this;
    }

    /** Also writes an OCI index (linux/amd64 = the image, linux/arm64 = same layers) tagged {@code tag}. */
    Builder index(String tag) {
      this.indexTag = tag;
      return this;
    }

    OciImage write(Path layout) throws IOException {
      if (layers.isEmpty()) {
        throw new IllegalArgumentException("an image needs at least one layer");
      }
      List<String> allTags = tags.isEmpty() ? List.of("v1") : List.copyOf(tags);
      Files.createDirectories(layout.resolve("blobs/sha256"));
      List<Layer> written = new ArrayList<>();
      for (int i = 0; i < layers.size(); i++) {
        written.add(writeLayer(layout, i, layers.get(i), seed));
      }
      Blob config = putJson(layout, CONFIG_TYPE, configJson("amd64", written));
      Blob manifest = putJson(layout, MANIFEST_TYPE, manifestJson(config, written));
      StringBuilder refs = new StringBuilder();
      for (String tag : allTags) {
        refs.append(refs.length() == 0 ? "" : ",").append(ref(manifest, tag));
      }
      Blob index = null;
      List<Blob> indexed = new ArrayList<>();
      if (indexTag != null) {
        Blob armConfig = putJson(layout, CONFIG_TYPE, configJson("arm64", written));
        Blob armManifest = putJson(layout, MANIFEST_TYPE, manifestJson(armConfig, written));
        indexed.addAll(List.of(manifest, armManifest, armConfig));
        index = putJson(layout, INDEX_TYPE, "{\"schemaVersion\":2,\"mediaType\":\"" + INDEX_TYPE
            + "\",\"manifests\":[" + platformed(manifest, "amd64") + "," + platformed(armManifest, "arm64") + "]}");
        refs.append(",").append(ref(index, indexTag));
      }
      Files.writeString(layout.resolve("oci-layout"), "{\"imageLayoutVersion\":\"1.0.0\"}");
      Files.writeString(layout.resolve("index.json"), "{\"schemaVersion\":2,\"manifests\":[" + refs + "]}");
      return new OciImage(layout, written, config, manifest, allTags, index, indexTag, indexed);
    }
  }

  Path layout() {
    return layout;
  }

  List<Layer> layers() {
    return layers;
  }

  Blob config() {
    return config;
  }

  Blob manifest() {
    return manifest;
  }

  /** The first tag. */
  String tag() {
    return tags.get(0);
  }

  List<String> tags() {
    return tags;
  }

  /** The OCI index blob, when the builder asked for one. */
  java.util.Optional<Blob> index() {
    return java.util.Optional.ofNullable(index);
  }

  java.util.Optional<String> indexTag() {
    return java.util.Optional.ofNullable(indexTag);
  }

  /** The blobs of the image under {@link #tag()}: manifest, config, then the layers in order. */
  List<Blob> blobs() {
    List<Blob> out = new ArrayList<>(List.of(manifest, config));
    layers.forEach(l -> out.add(l.blob()));
    return out;
  }

  /** Everything in the layout's blob store (with the index's extra manifests and configs). */
  List<Blob> allBlobs() {
    List<Blob> out = new ArrayList<>(blobs());
    if (index != null) {
      out.add(index);
      indexed.stream().filter(b -> !out.contains(b)).forEach(out::add);
    }
    return out;
  }

  /** The sum of the compressed layer sizes: what a pull transfers for layers. */
  long layerBytes() {
    return layers.stream().mapToLong(l -> l.blob().size()).sum();
  }

  Path blobPath(String digest) {
    return layout.resolve("blobs/sha256").resolve(digest.substring(digest.indexOf(':') + 1));
  }

  /** The uncompressed tar of a layer, decompressed from the layout as it is read. */
  InputStream openUncompressed(Layer layer) throws IOException {
    return new GZIPInputStream(Files.newInputStream(blobPath(layer.blob().digest())), 1 << 16);
  }

  // ---- writing ------------------------------------------------------------------------------------

  private static final int BLOCK = 512;
  /** File times in the tars: fixed, so the same builder writes the same bytes. */
  private static final long MTIME = 1767225600L; // 2026-01-01T00:00:00Z

  private static Layer writeLayer(Path layout, int n, long[] fileSizes, long seed) throws IOException {
    Path tmp = Files.createTempFile(layout, "layer-", ".tmp");
    MessageDigest compressed = sha256();
    MessageDigest uncompressed = sha256();
    long tarSize;
    try (OutputStream file = new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 16);
        DigestOutputStream gzOut = new DigestOutputStream(file, compressed);
        GZIPOutputStream gzip = new FastGzip(gzOut);
        CountingDigest tar = new CountingDigest(gzip, uncompressed)) {
      String dir = "layer" + n + "/";
      tar.write(header(dir, 0, '5'));
      for (int f = 0; f < fileSizes.length; f++) {
        long size = fileSizes[f];
        tar.write(header(dir + "file" + f + ".bin", size, '0'));
        SplittableRandom random = new SplittableRandom(seed * 1_000_003L + n * 1_009L + f);
        byte[] chunk = new byte[1 << 16];
        long left = size;
        while (left > 0) {
          int len = (int) Math.min(chunk.length, left);
          for (int i = 0; i < len; i += 8) {
            long r = random.nextLong();
            for (int b = 0; b < 8 && i + b < len; b++) {
              chunk[i + b] = (byte) (r >>> (8 * b));
            }
          }
          tar.write(chunk, 0, len);
          left -= len;
        }
        int pad = (int) ((BLOCK - size % BLOCK) % BLOCK);
        tar.write(new byte[pad]);
      }
      tar.write(new byte[2 * BLOCK]);
      tar.flush();
      tarSize = tar.count;
    }
    String digest = "sha256:" + HexFormat.of().formatHex(compressed.digest());
    Path target = layout.resolve("blobs/sha256").resolve(digest.substring(7));
    Files.move(tmp, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    List<Long> sizes = Arrays.stream(fileSizes).boxed().toList();
    return new Layer(new Blob(LAYER_TYPE, digest, Files.size(target)),
        "sha256:" + HexFormat.of().formatHex(uncompressed.digest()), tarSize, sizes);
  }

  /** A ustar header: regular file ('0') or directory ('5'), root-owned, fixed time. */
  private static byte[] header(String name, long size, char type) {
    byte[] h = new byte[BLOCK];
    put(h, 0, 100, name);
    put(h, 100, 8, octal(type == '5' ? 0755 : 0644, 7));
    put(h, 108, 8, octal(0, 7));
    put(h, 116, 8, octal(0, 7));
    put(h, 124, 12, octal(size, 11));
    put(h, 136, 12, octal(MTIME, 11));
    Arrays.fill(h, 148, 156, (byte) ' ');
    h[156] = (byte) type;
    put(h, 257, 6, "ustar");
    put(h, 263, 2, "00");
    put(h, 265, 32, "root");
    put(h, 297, 32, "root");
    long sum = 0;
    for (byte b : h) {
      sum += b & 0xff;
    }
    put(h, 148, 8, octal(sum, 6));
    return h;
  }

  private static String octal(long value, int digits) {
    String s = Long.toOctalString(value);
    if (s.length() > digits) {
      throw new IllegalArgumentException(value + " does not fit a tar field");
    }
    return "0".repeat(digits - s.length()) + s;
  }

  private static void put(byte[] h, int at, int len, String s) {
    byte[] b = s.getBytes(UTF_8);
    if (b.length > len) {
      throw new IllegalArgumentException("'" + s + "' does not fit a tar field of " + len);
    }
    System.arraycopy(b, 0, h, at, b.length);
  }

  private static String configJson(String arch, List<Layer> layers) {
    StringBuilder diffIds = new StringBuilder();
    StringBuilder history = new StringBuilder();
    for (Layer l : layers) {
      diffIds.append(diffIds.length() == 0 ? "" : ",").append('"').append(l.diffId()).append('"');
      history.append(history.length() == 0 ? "" : ",")
          .append("{\"created\":\"2026-01-01T00:00:00Z\",\"created_by\":\"corral OciImage\"}");
    }
    return "{\"created\":\"2026-01-01T00:00:00Z\",\"architecture\":\"" + arch + "\",\"os\":\"linux\","
        + "\"config\":{\"Env\":[\"PATH=/usr/bin:/bin\"],\"Cmd\":[\"/bin/true\"]},"
        + "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[" + diffIds + "]},\"history\":[" + history + "]}";
  }

  private static String manifestJson(Blob config, List<Layer> layers) {
    StringBuilder l = new StringBuilder();
    for (Layer layer : layers) {
      l.append(l.length() == 0 ? "" : ",").append(layer.blob().descriptor());
    }
    return "{\"schemaVersion\":2,\"mediaType\":\"" + MANIFEST_TYPE + "\",\"config\":" + config.descriptor()
        + ",\"layers\":[" + l + "]}";
  }

  private static String platformed(Blob manifest, String arch) {
    String d = manifest.descriptor();
    return d.substring(0, d.length() - 1) + ",\"platform\":{\"architecture\":\"" + arch + "\",\"os\":\"linux\"}}";
  }

  private static String ref(Blob blob, String tag) {
    String d = blob.descriptor();
    return d.substring(0, d.length() - 1) + ",\"annotations\":{\"org.opencontainers.image.ref.name\":\"" + tag + "\"}}";
  }

  private static Blob putJson(Path layout, String mediaType, String json) throws IOException {
    byte[] bytes = json.getBytes(UTF_8);
    String hex = HexFormat.of().formatHex(sha256().digest(bytes));
    Files.write(layout.resolve("blobs/sha256").resolve(hex), bytes);
    return new Blob(mediaType, "sha256:" + hex, bytes.length);
  }

  static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * gzip with stored (uncompressed) deflate blocks: still a valid gzip stream every client reads,
   * and the file contents are random, so compressing would only cost time (a 256 MiB layer takes
   * about 12 s at the fastest level).
   */
  private static final class FastGzip extends GZIPOutputStream {
    FastGzip(OutputStream out) throws IOException {
      super(out, 1 << 16);
      def.setLevel(Deflater.NO_COMPRESSION);
    }
  }

  /** Digests and counts what passes through. */
  private static final class CountingDigest extends DigestOutputStream {
    long count;

    CountingDigest(OutputStream out, MessageDigest digest) {
      super(out, digest);
    }

    @Override
    public void write(int b) throws IOException {
      super.write(b);
      count++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      super.write(b, off, len);
      count += len;
    }
  }
}
