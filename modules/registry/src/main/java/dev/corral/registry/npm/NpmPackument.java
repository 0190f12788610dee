package dev.corral.registry.npm;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import dev.corral.core.key.Digest;
import dev.corral.registry.JsonDocuments;
import dev.corral.registry.PathSegment;
import java.io.IOException;
import java.net.URI;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import org.apache.pekko.util.ByteString;

/**
 * What Corral reads in an npm packument (full or abbreviated: both carry
 * {@code versions.<v>.dist}): the tarball each version names and its expected digest, and the
 * serve-time rewrite of {@code dist.tarball} to Corral's own URL.
 *
 * <p>A tarball's file name in Corral's URL is the last segment of the upstream's tarball URL when
 * that is a plain {@code *.tgz} name, else {@code <name>-<version>.tgz}; the rewrite and the
 * lookup use the same rule, so every URL Corral hands out resolves back to the upstream URL.
 */
final class NpmPackument {
  private NpmPackument() {}

  /** A tarball a packument names. */
  record Tarball(String url, Optional<Digest> expected) {}

  private static final Pattern FILE = Pattern.compile("[A-Za-z0-9_~!*'()@+-][A-Za-z0-9._~!*'()@+-]*\\.tgz");

  static boolean isTarballFile(String file) {
    return file.length() <= 255 && FILE.matcher(file).matches();
  }

  /** The file name Corral serves a version's tarball under; empty when neither rule gives a plain name. */
  static Optional<String> fileName(String packageName, String version, String tarballUrl) {
    Optional<String> last = PathSegment.lastOf(tarballUrl);
    if (last.isPresent() && isTarballFile(last.get())) {
      return last;
    }
    String unscoped = packageName.substring(packageName.indexOf('/') + 1);
    String standard = unscoped + "-" + version + ".tgz";
    return isTarballFile(standard) ? Optional.of(standard) : Optional.empty();
  }

  /**
   * Rewrites every {@code versions.*.dist.tarball} to {@code <repoBase>/<name>/-/<file>}; the rest
   * of the document is copied as it is. Returns the body unchanged when it is not a JSON object.
   */
  static ByteString rewrite(ByteString stored, String packageName, String repoBase) {
    if (!JsonDocuments.looksLikeJson(stored)) {
      return stored;
    }
    String prefix = repoBase + "/" + NpmRepository.encodedPath(packageName) + "/-/";
    try {
      return JsonDocuments.rewriteStrings(stored, (ctx, value) -> {
        if (!isTarballField(ctx)) {
          return value;
        }
        return fileName(packageName, JsonDocuments.nameAt(ctx, 2), value)
            .map(f -> prefix + PathSegment.encode(f))
            .orElse(value);
      });
    } catch (IOException | RuntimeException e) {
      return stored;
    }
  }

  /** {@code versions.<v>.dist.tarball} of the root object. */
  private static boolean isTarballField(JsonStreamContext ctx) {
    return JsonDocuments.depth(ctx) == 4
        && ctx.inObject() && "tarball".equals(ctx.getCurrentName())
        && ctx.getParent().inObject() && "dist".equals(JsonDocuments.nameAt(ctx, 1))
        && ctx.getParent().getParent().inObject()
        && ctx.getParent().getParent().getParent().inObject() && "versions".equals(JsonDocuments.nameAt(ctx, 3));
  }

  /**
   * The tarballs a packument names, by Corral's file name: upstream URL (http or https only) and
   * expected digest. The first version naming a file wins; empty when the body is not a
   * packument.
   */
  static Map<String, Tarball> tarballs(ByteString packument, String packageName) {
    Map<String, Tarball> out = new LinkedHashMap<>();
    if (!JsonDocuments.looksLikeJson(packument)) {
      return out;
    }
    try (JsonParser p = JsonDocuments.parser(packument)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return out;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (!field.equals("versions") || value != JsonToken.START_OBJECT) {
          p.skipChildren();
          continue;
        }
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String version = p.currentName();
          if (p.nextToken() != JsonToken.START_OBJECT) {
            p.skipChildren();
            continue;
          }
          version(p, packageName, version, out);
        }
      }
    } catch (IOException | RuntimeException e) {
      return out; // what could be read
    }
    return out;
  }

  /** Reads one version object (the parser is on its START_OBJECT) up to its END_OBJECT. */
  private static void version(JsonParser p, String packageName, String version, Map<String, Tarball> out)
      throws IOException {
    String tarball = null;
    String integrity = null;
    String shasum = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken value = p.nextToken();
      if (!field.equals("dist") || value != JsonToken.START_OBJECT) {
        p.skipChildren();
        continue;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        JsonToken v = p.nextToken();
        if (v == JsonToken.VALUE_STRING) {
          switch (name) {
            case "tarball" -> tarball = p.getText();
            case "integrity" -> integrity = p.getText();
            case "shasum" -> shasum = p.getText();
            default -> { }
          }
        } else {
          p.skipChildren();
        }
      }
    }
    if (tarball == null || !isHttp(tarball)) {
      return;
    }
    Optional<String> file = fileName(packageName, version, tarball);
    if (file.isPresent() && !out.containsKey(file.get())) {
      out.put(file.get(), new Tarball(tarball, expected(integrity, shasum)));
    }
  }

  private static boolean isHttp(String url) {
    try {
      URI u = new URI(url);
      String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
      return (scheme.equals("http") || scheme.equals("https")) && u.getHost() != null;
    } catch (java.net.URISyntaxException e) {
      return false;
    }
  }

  /**
   * The digest to verify a tarball with: the strongest Corral can check of {@code dist.integrity}
   * (SRI: {@code sha512-<base64>}, several space-separated) else {@code dist.shasum} (sha1 hex).
   */
  static Optional<Digest> expected(String integrity, String shasum) {
    Optional<Digest> best = Optional.empty();
    int bestRank = 0;
    if (integrity != null) {
      for (String entry : integrity.trim().split("\\s+")) {
        int dash = entry.indexOf('-');
        if (dash <= 0) {
          continue;
        }
        String algorithm = entry.substring(0, dash).toLowerCase(Locale.ROOT);
        int rank = switch (algorithm) {
          case "sha512" -> 3;
          case "sha256" -> 2;
          case "sha1" -> 1;
          default -> 0; // sha384 and unknown ones: Corral cannot check them
        };
        if (rank <= bestRank) {
          continue;
        }
        String b64 = entry.substring(dash + 1);
        int opts = b64.indexOf('?'); // SRI options follow a '?'
        if (opts >= 0) {
          b64 = b64.substring(0, opts);
        }
        Optional<Digest> d = sriDigest(algorithm, b64);
        if (d.isPresent()) {
          best = d;
          bestRank = rank;
        }
      }
    }
    if (best.isEmpty() && shasum != null && shasum.trim().matches("[0-9a-fA-F]{40}")) {
      best = Optional.of(new Digest("sha1", shasum.trim()));
    }
    return best;
  }

  /** An SRI hash (base64) as a hex {@link Digest}, when it decodes to the algorithm's length. */
  static Optional<Digest> sriDigest(String algorithm, String base64) {
    int length = switch (algorithm) {
      case "sha512" -> 64;
      case "sha256" -> 32;
      case "sha1" -> 20;
      default -> -1;
    };
    try {
      byte[] raw = Base64.getDecoder().decode(base64);
      return raw.length == length ? Optional.of(new Digest(algorithm, HexFormat.of().formatHex(raw))) : Optional.empty();
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
