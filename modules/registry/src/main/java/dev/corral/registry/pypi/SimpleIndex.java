package dev.corral.registry.pypi;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import dev.corral.core.key.Digest;
import dev.corral.registry.JsonDocuments;
import dev.corral.registry.PathSegment;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import org.apache.pekko.util.ByteString;

/**
 * A project's page of a Python simple repository, in either form: PEP 503 HTML (anchors whose
 * {@code href} ends with {@code #<alg>=<hex>}, {@code data-core-metadata} or
 * {@code data-dist-info-metadata}) or PEP 691 JSON ({@code files[].url}, {@code hashes},
 * {@code core-metadata} / {@code dist-info-metadata}). The form is recognised from the body, since
 * an upstream that does not negotiate may answer HTML to a JSON request.
 *
 * <p>A file's name is the decoded last segment of its URL (PEP 503: the anchor text must match
 * it); the rewrite and {@link #files} use the same rule.
 */
final class SimpleIndex {
  private SimpleIndex() {}

  /**
   * One file the page lists.
   *
   * @param url the upstream URL, resolved against the page's URL, without fragment
   * @param expected the file's digest from the page, if it gives one Corral can check
   * @param metadata whether the page says a {@code .metadata} file exists (PEP 658/714)
   * @param metadataExpected the {@code .metadata} file's digest, if given
   */
  record File(String filename, String url, Optional<Digest> expected, boolean metadata,
      Optional<Digest> metadataExpected) {}

  /** The hash algorithms Corral can verify, strongest first. */
  private static final List<String> PREFERRED = List.of("sha512", "sha256", "sha1", "md5");

  /**
   * The files a page lists, by file name (the first entry wins). Only http(s) URLs; a page that
   * cannot be read yields what could be read.
   */
  static Map<String, File> files(ByteString page, String pageUrl) {
    return JsonDocuments.looksLikeJson(page) ? jsonFiles(page, pageUrl) : htmlFiles(page, pageUrl);
  }

  // ---- HTML -------------------------------------------------------------------------------------

  private static Map<String, File> htmlFiles(ByteString page, String pageUrl) {
    Map<String, File> out = new LinkedHashMap<>();
    String text = page.decodeString(StandardCharsets.ISO_8859_1);
    String base = pageUrl;
    for (HtmlAnchors.Tag tag : HtmlAnchors.tags(text)) {
      Optional<HtmlAnchors.Attribute> href = tag.attribute("href");
      if (href.isEmpty()) {
        continue;
      }
      if (tag.name().equals("base")) {
        base = resolve(pageUrl, href.get().value()).orElse(base);
        continue;
      }
      String link = href.get().value().trim();
      Optional<String> filename = PathSegment.lastOf(link).filter(PathSegment::isPlainName);
      Optional<String> url = resolve(base, withoutFragment(link));
      if (filename.isEmpty() || url.isEmpty() || out.containsKey(filename.get())) {
        continue;
      }
      Optional<Digest> expected = fragmentDigest(link);
      Optional<HtmlAnchors.Attribute> meta = tag.attribute("data-core-metadata")
          .or(() -> tag.attribute("data-dist-info-metadata"));
      boolean metadata = meta.isPresent() && !meta.get().value().trim().equalsIgnoreCase("false");
      Optional<Digest> metadataExpected = meta.flatMap(m -> hashPair(m.value().trim()));
      out.put(filename.get(), new File(filename.get(), url.get(), expected, metadata, metadataExpected));
    }
    return out;
  }

  /** {@code #sha256=<hex>} (or another algorithm Corral can check) at the end of a link. */
  private static Optional<Digest> fragmentDigest(String link) {
    int hash = link.indexOf('#');
    return hash < 0 ? Optional.empty() : hashPair(link.substring(hash + 1));
  }

  /** {@code <alg>=<hex>}. */
  private static Optional<Digest> hashPair(String pair) {
    int eq = pair.indexOf('=');
    if (eq <= 0) {
      return Optional.empty();
    }
    return digest(pair.substring(0, eq), pair.substring(eq + 1));
  }

  private static Optional<Digest> digest(String algorithm, String hex) {
    String a = algorithm.trim().toLowerCase(Locale.ROOT);
    if (!PREFERRED.contains(a) || !hex.trim().matches("[0-9a-fA-F]+") || hex.trim().length() != hexLength(a)) {
      return Optional.empty();
    }
    return Optional.of(new Digest(a, hex.trim()));
  }

  private static int hexLength(String algorithm) {
    return switch (algorithm) {
      case "sha512" -> 128;
      case "sha256" -> 64;
      case "sha1" -> 40;
      default -> 32;
    };
  }

  // ---- JSON -------------------------------------------------------------------------------------

  private static Map<String, File> jsonFiles(ByteString page, String pageUrl) {
    Map<String, File> out = new LinkedHashMap<>();
    try (JsonParser p = JsonDocuments.parser(page)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        return out;
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (!field.equals("files") || value != JsonToken.START_ARRAY) {
          p.skipChildren();
          continue;
        }
        while (p.nextToken() == JsonToken.START_OBJECT) {
          jsonFile(p, pageUrl).filter(f -> !out.containsKey(f.filename())).ifPresent(f -> out.put(f.filename(), f));
        }
      }
    } catch (IOException | RuntimeException e) {
      return out; // what could be read
    }
    return out;
  }

  /** One {@code files[]} object; the parser is on its START_OBJECT and ends on its END_OBJECT. */
  private static Optional<File> jsonFile(JsonParser p, String pageUrl) throws IOException {
    String url = null;
    Map<String, String> hashes = new LinkedHashMap<>();
    Boolean metadata = null;
    Map<String, String> metadataHashes = new LinkedHashMap<>();
    boolean coreSeen = false;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken v = p.nextToken();
      switch (field) {
        case "url" -> {
          if (v == JsonToken.VALUE_STRING) {
            url = p.getText();
          } else {
            p.skipChildren();
          }
        }
        case "hashes" -> stringMap(p, v, hashes);
        case "core-metadata", "dist-info-metadata" -> {
          // PEP 714: core-metadata wins over the older name.
          boolean core = field.equals("core-metadata");
          if (coreSeen && !core) {
            p.skipChildren();
            break;
          }
          coreSeen |= core;
          metadataHashes.clear();
          if (v == JsonToken.START_OBJECT) {
            metadata = true;
            stringMap(p, v, metadataHashes);
          } else {
            metadata = v == JsonToken.VALUE_TRUE;
            p.skipChildren();
          }
        }
        default -> p.skipChildren();
      }
    }
    if (url == null) {
      return Optional.empty();
    }
    Optional<String> filename = PathSegment.lastOf(url).filter(PathSegment::isPlainName);
    Optional<String> resolved = resolve(pageUrl, withoutFragment(url));
    if (filename.isEmpty() || resolved.isEmpty()) {
      return Optional.empty();
    }
    String link = url;
    Optional<Digest> expected = strongest(hashes).or(() -> fragmentDigest(link));
    return Optional.of(new File(filename.get(), resolved.get(), expected, Boolean.TRUE.equals(metadata),
        strongest(metadataHashes)));
  }

  private static void stringMap(JsonParser p, JsonToken v, Map<String, String> out) throws IOException {
    if (v != JsonToken.START_OBJECT) {
      p.skipChildren();
      return;
    }
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String k = p.currentName();
      if (p.nextToken() == JsonToken.VALUE_STRING) {
        out.put(k.toLowerCase(Locale.ROOT), p.getText());
      } else {
        p.skipChildren();
      }
    }
  }

  private static Optional<Digest> strongest(Map<String, String> hashes) {
    for (String a : PREFERRED) {
      if (hashes.containsKey(a)) {
        Optional<Digest> d = digest(a, hashes.get(a));
        if (d.isPresent()) {
          return d;
        }
      }
    }
    return Optional.empty();
  }

  // ---- rewrite ----------------------------------------------------------------------------------

  /**
   * Points every file link at {@code <filesBase>/<filename>} (fragments such as
   * {@code #sha256=} kept); everything else is copied as it is, including the metadata
   * attributes, which describe the {@code .metadata} file Corral also serves.
   */
  static ByteString rewrite(ByteString page, String filesBase) {
    try {
      return JsonDocuments.looksLikeJson(page) ? rewriteJson(page, filesBase) : rewriteHtml(page, filesBase);
    } catch (IOException | RuntimeException e) {
      return page;
    }
  }

  private static ByteString rewriteHtml(ByteString page, String filesBase) {
    String text = page.decodeString(StandardCharsets.ISO_8859_1);
    StringBuilder out = new StringBuilder(text.length() + 1024);
    int copied = 0;
    for (HtmlAnchors.Tag tag : HtmlAnchors.tags(text)) {
      if (!tag.name().equals("a")) {
        continue;
      }
      Optional<HtmlAnchors.Attribute> href = tag.attribute("href");
      if (href.isEmpty()) {
        continue;
      }
      String link = href.get().value().trim();
      Optional<String> filename = PathSegment.lastOf(link).filter(PathSegment::isPlainName);
      if (filename.isEmpty() || resolve("http://page.invalid/", withoutFragment(link)).isEmpty()) {
        continue; // not a file link Corral serves (files() skips it too)
      }
      int hash = link.indexOf('#');
      String url = filesBase + "/" + PathSegment.encode(filename.get()) + (hash >= 0 ? link.substring(hash) : "");
      out.append(text, copied, href.get().start());
      // ASCII only: the file name is percent-encoded; a fragment's non-ASCII is escaped as references
      out.append("href=\"").append(asciiAttribute(url)).append('"');
      copied = href.get().end();
    }
    out.append(text, copied, text.length());
    return ByteString.fromString(out.toString(), StandardCharsets.ISO_8859_1);
  }

  private static String asciiAttribute(String value) {
    StringBuilder out = new StringBuilder(value.length());
    value.codePoints().forEach(cp -> {
      if (cp < 0x80) {
        out.append(HtmlAnchors.escape(String.valueOf((char) cp)));
      } else {
        out.append("&#x").append(Integer.toHexString(cp)).append(';');
      }
    });
    return out.toString();
  }

  private static ByteString rewriteJson(ByteString page, String filesBase) throws IOException {
    return JsonDocuments.rewriteStrings(page, (ctx, value) -> {
      if (!isFileUrl(ctx)) {
        return value;
      }
      int hash = value.indexOf('#');
      if (resolve("http://page.invalid/", withoutFragment(value)).isEmpty()) {
        return value;
      }
      return PathSegment.lastOf(value).filter(PathSegment::isPlainName)
          .map(f -> filesBase + "/" + PathSegment.encode(f) + (hash >= 0 ? value.substring(hash) : ""))
          .orElse(value);
    });
  }

  /** {@code files[*].url} of the root object. */
  private static boolean isFileUrl(JsonStreamContext ctx) {
    return JsonDocuments.depth(ctx) == 3 && ctx.inObject() && "url".equals(ctx.getCurrentName())
        && ctx.getParent().inArray()
        && ctx.getParent().getParent().inObject() && "files".equals(JsonDocuments.nameAt(ctx, 2));
  }

  // ---- URLs -------------------------------------------------------------------------------------

  private static String withoutFragment(String link) {
    int hash = link.indexOf('#');
    return hash < 0 ? link : link.substring(0, hash);
  }

  /** {@code link} resolved against {@code base}; only absolute http(s) results. */
  static Optional<String> resolve(String base, String link) {
    try {
      URI resolved = new URI(base).resolve(new URI(link));
      String scheme = resolved.getScheme() == null ? "" : resolved.getScheme().toLowerCase(Locale.ROOT);
      if (!(scheme.equals("http") || scheme.equals("https")) || resolved.getHost() == null) {
        return Optional.empty();
      }
      return Optional.of(resolved.toString());
    } catch (URISyntaxException | IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
