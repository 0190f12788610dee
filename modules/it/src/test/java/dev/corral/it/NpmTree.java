package dev.corral.it;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

/**
 * Test data: a tree of {@code size} npm packages, built in memory (no {@code npm pack}, which
 * costs a second per package), served by a {@link FixtureRegistry} whose packuments name its own
 * tarball URLs. Package {@code i} depends on packages {@code 2i+1} and {@code 2i+2}, so installing
 * the root installs them all; every fourth package is scoped. The packages listed as large carry
 * {@code largeBytes} of incompressible data, so their tarballs stream through Corral when the
 * repository's inline limit is below it.
 *
 * <p>Each package's {@code index.js} exports its own name followed by its dependencies' exports,
 * so {@code require(root)} lists every package that loaded.
 */
final class NpmTree {
  /** One package of the tree, version 1.0.0. */
  record Pkg(String name, List<String> dependencies, byte[] tarball) {
    String unscoped() {
      return name.substring(name.indexOf('/') + 1);
    }

    /** The packument path as Corral asks the registry for it (npm itself sends %2f). */
    String packumentPath() {
      return "/" + name.replace("/", "%2F");
    }

    String tarballPath() {
      return "/" + name + "/-/" + unscoped() + "-1.0.0.tgz";
    }
  }

  final List<Pkg> packages;

  private NpmTree(List<Pkg> packages) {
    this.packages = List.copyOf(packages);
  }

  /** {@code size} packages; those whose index is in {@code large} carry {@code largeBytes} of random data. */
  static NpmTree of(int size, List<Integer> large, int largeBytes) throws IOException {
    List<String> names = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      names.add(i % 4 == 3 ? "@tree/s" + i : "tree-p" + i);
    }
    List<Pkg> out = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      List<String> deps = new ArrayList<>();
      for (int c : new int[] {2 * i + 1, 2 * i + 2}) {
        if (c < size) {
          deps.add(names.get(c));
        }
      }
      byte[] payload = large.contains(i) ? random(largeBytes, i) : null;
      out.add(new Pkg(names.get(i), deps, tarball(names.get(i), deps, payload)));
    }
    return new NpmTree(out);
  }

  Pkg root() {
    return packages.get(0);
  }

  /** The sorted names of every package: what {@code require(root)} lists once installed. */
  List<String> names() {
    return packages.stream().map(Pkg::name).sorted().toList();
  }

  /** A fixture registry serving this tree's packuments and tarballs from {@code dir}. */
  FixtureRegistry serve(Path dir) throws IOException {
    FixtureRegistry fixture = new FixtureRegistry(dir);
    Map<String, byte[]> packuments = new LinkedHashMap<>();
    for (Pkg p : packages) {
      Path file = fixture.root().resolve(p.tarballPath().substring(1));
      Files.createDirectories(file.getParent());
      Files.write(file, p.tarball());
      packuments.put(p.packumentPath(), packument(p, fixture.url() + p.tarballPath()).getBytes(StandardCharsets.UTF_8));
    }
    fixture.route(r -> Optional.ofNullable(packuments.get(r.path()))
        .map(body -> FixtureRegistry.Answer.of(200, "application/json", body)));
    return fixture;
  }

  private static String packument(Pkg p, String tarballUrl) {
    StringBuilder deps = new StringBuilder("{");
    for (String d : p.dependencies()) {
      deps.append(deps.length() > 1 ? "," : "").append('"').append(d).append("\":\"^1.0.0\"");
    }
    deps.append('}');
    return """
        {"_id":"%s","name":"%s","dist-tags":{"latest":"1.0.0"},
         "time":{"created":"2026-01-01T00:00:00.000Z","modified":"2026-01-01T00:00:00.000Z","1.0.0":"2026-01-01T00:00:00.000Z"},
         "versions":{"1.0.0":{"name":"%s","version":"1.0.0","main":"index.js","license":"MIT","dependencies":%s,
           "dist":{"tarball":"%s","shasum":"%s","integrity":"sha512-%s"}}}}
        """.formatted(p.name(), p.name(), p.name(), deps, tarballUrl,
        HexFormat.of().formatHex(digest("SHA-1", p.tarball())),
        Base64.getEncoder().encodeToString(digest("SHA-512", p.tarball())));
  }

  /** A gzipped ustar archive with {@code package/package.json}, {@code package/index.js} and maybe {@code package/data.bin}. */
  private static byte[] tarball(String name, List<String> deps, byte[] payload) throws IOException {
    StringBuilder depJson = new StringBuilder("{");
    StringBuilder requires = new StringBuilder();
    for (String d : deps) {
      depJson.append(depJson.length() > 1 ? "," : "").append('"').append(d).append("\":\"^1.0.0\"");
      requires.append(".concat(require('").append(d).append("'))");
    }
    depJson.append('}');
    String packageJson = """
        {"name":"%s","version":"1.0.0","main":"index.js","license":"MIT","dependencies":%s}
        """.formatted(name, depJson);
    String index = "module.exports = ['" + name + "']" + requires + ";\n";
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
      entry(gz, "package/package.json", packageJson.getBytes(StandardCharsets.UTF_8));
      entry(gz, "package/index.js", index.getBytes(StandardCharsets.UTF_8));
      if (payload != null) {
        entry(gz, "package/data.bin", payload);
      }
      gz.write(new byte[1024]); // two zero blocks end the archive
    }
    return bytes.toByteArray();
  }

  /** One regular file in ustar format: a 512-byte header, the data, zero padding to 512. */
  private static void entry(GZIPOutputStream out, String path, byte[] data) throws IOException {
    byte[] h = new byte[512];
    put(h, 0, path);
    put(h, 100, "0000644");
    put(h, 108, "0000000");
    put(h, 116, "0000000");
    put(h, 124, String.format("%011o", data.length));
    put(h, 136, String.format("%011o", 1767225600L)); // 2026-01-01
    h[156] = '0';
    put(h, 257, "ustar");
    put(h, 263, "00");
    for (int i = 148; i < 156; i++) {
      h[i] = ' '; // the checksum is computed with its own field as spaces
    }
    int sum = 0;
    for (byte b : h) {
      sum += b & 0xff;
    }
    put(h, 148, String.format("%06o", sum));
    h[154] = 0;
    h[155] = ' ';
    out.write(h);
    out.write(data);
    int pad = (512 - data.length % 512) % 512;
    out.write(new byte[pad]);
  }

  /**
   * The regular files of a gzipped ustar archive, by path without its first segment
   * ({@code package/index.js} -> {@code index.js}), read back from the bytes served: what an
   * installed package's files must equal.
   */
  static Map<String, byte[]> files(byte[] tgz) throws IOException {
    byte[] tar;
    try (GZIPInputStream in = new GZIPInputStream(new java.io.ByteArrayInputStream(tgz))) {
      tar = in.readAllBytes();
    }
    Map<String, byte[]> out = new LinkedHashMap<>();
    for (int at = 0; at + 512 <= tar.length && tar[at] != 0; ) {
      String name = field(tar, at, 100);
      String prefix = field(tar, at + 345, 155);
      String path = prefix.isEmpty() ? name : prefix + "/" + name;
      int size = Integer.parseInt(field(tar, at + 124, 12).trim(), 8);
      byte type = tar[at + 156];
      if (type == '0' || type == 0) {
        out.put(path.substring(path.indexOf('/') + 1), java.util.Arrays.copyOfRange(tar, at + 512, at + 512 + size));
      }
      at += 512 + (size + 511) / 512 * 512;
    }
    return out;
  }

  private static String field(byte[] header, int at, int length) {
    int end = at;
    while (end < at + length && header[end] != 0) {
      end++;
    }
    return new String(header, at, end - at, StandardCharsets.US_ASCII);
  }

  private static void put(byte[] header, int at, String ascii) {
    byte[] b = ascii.getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(b, 0, header, at, b.length);
  }

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  private static byte[] digest(String algorithm, byte[] b) {
    try {
      return MessageDigest.getInstance(algorithm).digest(b);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
