package dev.corral.server;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The run that makes the class data sharing archive of {@code ./corral} and of the container
 * image. Started once per build with {@code -XX:ArchiveClassesAtExit=FILE}, it runs a whole node
 * on free loopback ports with a temporary data directory, behind it an upstream of its own on
 * 127.0.0.1, and asks it what a node is asked on its first day: misses (small, and one large
 * enough to stream), hits from memory and from disk, a HEAD, an upstream 404, a bad path, an npm
 * packument and its verified tarball, a Maven artifact verified by its checksum file and a
 * {@code maven-metadata.xml}, an OCI manifest by tag and a layer by digest, health and metrics. It checks every answer, stops the node
 * the way SIGTERM does and exits; the JVM then writes every class the run loaded, lambda forms
 * included, into the archive. A node started with it finds those classes already parsed and
 * verified: its first misses and hits skip loading them (docs/operations.md, "JVM and memory").
 *
 * <p>Exit status 0 when every answer was right, 1 otherwise (the archive is then not trusted).
 */
public final class CdsTraining {
  private static final int SMALL = 1024;
  private static final int LARGE = 9 * 1024 * 1024; // above the default inline limit (8 MiB): streamed

  private CdsTraining() {}

  public static void main(String[] args) {
    System.setProperty(Main.COMMON_POOL_PARALLELISM,
        String.valueOf(Math.max(4, Runtime.getRuntime().availableProcessors())));
    List<String> wrong;
    try {
      wrong = run();
    } catch (Exception e) {
      wrong = List.of("the run failed: " + e);
    }
    wrong.forEach(w -> System.err.println("corral: cds training: " + w));
    System.exit(wrong.isEmpty() ? 0 : 1);
  }

  /** Runs the whole training; returns what was answered wrongly (empty when all was right). */
  static List<String> run() throws Exception {
    Path dir = Files.createTempDirectory("corral-cds-training");
    HttpServer upstream = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    upstream.createContext("/", CdsTraining::answer);
    upstream.start();
    List<String> wrong = new ArrayList<>();
    try {
      String origin = "http://127.0.0.1:" + upstream.getAddress().getPort();
      String[] args = {"--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0", "--peer-port", "0",
          "--management-port", "0", "--data-dir", dir.resolve("data").toString(),
          "--repo", "files=generic:" + origin + "/files", "--repo", "npm=npm:" + origin + "/npm",
          "--repo", "maven=maven:" + origin + "/maven", "--repo", "images=oci:" + origin + "/oci"};
      try (CorralServer node = CorralServer.start(CorralSettings.load(args, Map.of()))) {
        String base = "http://127.0.0.1:" + node.address().getPort();
        for (int i = 0; i < 3; i++) {
          expect(wrong, base, "GET", "/files/small-" + i + ".bin", 200, "MISS");
          expect(wrong, base, "GET", "/files/small-" + i + ".bin", 200, "HIT");
          expect(wrong, base, "HEAD", "/files/small-" + i + ".bin", 200, "HIT");
        }
        expect(wrong, base, "GET", "/files/large.bin", 200, "MISS");
        expect(wrong, base, "GET", "/files/large.bin", 200, "HIT");
        expect(wrong, base, "GET", "/files/missing.bin", 404, null);
        expect(wrong, base, "GET", "/files/../etc/passwd", 400, null);
        expect(wrong, base, "GET", "/npm/left-pad", 200, "MISS");
        expect(wrong, base, "GET", "/npm/left-pad/-/left-pad-1.0.0.tgz", 200, "MISS");
        expect(wrong, base, "GET", "/npm/left-pad/-/left-pad-1.0.0.tgz", 200, "HIT");
        expect(wrong, base, "GET", "/maven/org/example/lib/1.0/lib-1.0.jar", 200, "MISS");
        expect(wrong, base, "GET", "/maven/org/example/lib/1.0/lib-1.0.jar", 200, "HIT");
        expect(wrong, base, "GET", "/maven/org/example/lib/1.0/lib-1.0.jar.sha1", 200, null);
        expect(wrong, base, "GET", "/maven/org/example/lib/maven-metadata.xml", 200, "MISS");
        expect(wrong, base, "GET", "/maven/org/example/lib/maven-metadata.xml.sha1", 200, null);
        expect(wrong, base, "GET", "/v2/", 200, null);
        expect(wrong, base, "GET", "/v2/images/team/app/manifests/1.0", 200, "MISS");
        expect(wrong, base, "GET", "/v2/images/team/app/manifests/1.0", 200, "HIT");
        expect(wrong, base, "GET", "/v2/images/team/app/blobs/" + LAYER_DIGEST, 200, "MISS");
        expect(wrong, base, "HEAD", "/v2/images/team/app/blobs/" + LAYER_DIGEST, 200, "HIT");
        expect(wrong, base, "GET", "/-/health/live", 200, null);
        expect(wrong, base, "GET", "/-/health/ready", 200, null);
        expect(wrong, base, "GET", "/-/metrics", 200, null);
      }
    } finally {
      upstream.stop(0);
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
    return wrong;
  }

  private static void expect(List<String> wrong, String base, String method, String path, int status, String xCache)
      throws IOException {
    HttpURLConnection c = (HttpURLConnection) URI.create(base + path).toURL().openConnection();
    c.setRequestMethod(method);
    c.setConnectTimeout(10_000);
    c.setReadTimeout(30_000);
    int got = c.getResponseCode();
    try (InputStream body = got < 400 ? c.getInputStream() : c.getErrorStream()) {
      if (body != null) {
        body.transferTo(OutputStream.nullOutputStream());
      }
    }
    String cache = c.getHeaderField("X-Cache");
    if (got != status || (xCache != null && !xCache.equals(cache))) {
      wrong.add(method + " " + path + ": " + got + " X-Cache " + cache + ", expected " + status
          + (xCache == null ? "" : " X-Cache " + xCache));
    }
  }

  private static final byte[] TARBALL = bytes(SMALL, 7);
  private static final String LAYER_DIGEST =
      "sha256:" + java.util.HexFormat.of().formatHex(digest("SHA-256", TARBALL));

  /** The upstream: bodies of a given size under /files, one npm package under /npm, 404 else. */
  private static void answer(HttpExchange exchange) throws IOException {
    String path = exchange.getRequestURI().getPath();
    byte[] body = null;
    String type = "application/octet-stream";
    if (path.startsWith("/files/small-")) {
      body = bytes(SMALL, path.hashCode());
    } else if (path.equals("/files/large.bin")) {
      body = bytes(LARGE, 1);
    } else if (path.equals("/npm/left-pad")) {
      String host = exchange.getLocalAddress().getPort() + "";
      String integrity = "sha512-" + Base64.getEncoder().encodeToString(digest("SHA-512", TARBALL));
      body = ("{\"name\":\"left-pad\",\"dist-tags\":{\"latest\":\"1.0.0\"},\"versions\":{\"1.0.0\":{\"name\":"
          + "\"left-pad\",\"version\":\"1.0.0\",\"dist\":{\"tarball\":\"http://127.0.0.1:" + host
          + "/npm/left-pad/-/left-pad-1.0.0.tgz\",\"integrity\":\"" + integrity + "\"}}}}")
          .getBytes(StandardCharsets.UTF_8);
      type = "application/json";
    } else if (path.equals("/npm/left-pad/-/left-pad-1.0.0.tgz")) {
      body = TARBALL;
    } else if (path.equals("/oci/v2/team/app/manifests/1.0")) {
      body = ("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"layers\":[{"
          + "\"digest\":\"" + LAYER_DIGEST + "\",\"size\":" + TARBALL.length + "}]}").getBytes(StandardCharsets.UTF_8);
      type = "application/vnd.oci.image.manifest.v1+json";
    } else if (path.equals("/oci/v2/team/app/blobs/" + LAYER_DIGEST)) {
      body = TARBALL;
    } else if (path.equals("/maven/org/example/lib/1.0/lib-1.0.jar")) {
      body = TARBALL;
    } else if (path.equals("/maven/org/example/lib/1.0/lib-1.0.jar.sha1")) {
      body = java.util.HexFormat.of().formatHex(digest("SHA-1", TARBALL)).getBytes(StandardCharsets.US_ASCII);
      type = "text/plain";
    } else if (path.equals("/maven/org/example/lib/maven-metadata.xml")) {
      body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<metadata><groupId>org.example</groupId><artifactId>lib"
          + "</artifactId><versioning><latest>1.0</latest><release>1.0</release><versions><version>1.0</version>"
          + "</versions><lastUpdated>20261201000000</lastUpdated></versioning></metadata>\n")
          .getBytes(StandardCharsets.UTF_8);
      type = "application/xml";
    }
    try (exchange) {
      if (body == null) {
        exchange.sendResponseHeaders(404, -1);
        return;
      }
      exchange.getResponseHeaders().set("Content-Type", type);
      exchange.getResponseHeaders().set("ETag", "\"" + body.length + "\"");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
    }
  }

  private static byte[] bytes(int size, int seed) {
    byte[] b = new byte[size];
    new java.util.Random(seed).nextBytes(b);
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
