package dev.corral.registry.pypi;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.corral.registry.GroupMerge;
import dev.corral.registry.JsonDocuments;
import dev.corral.registry.PathSegment;
import dev.corral.registry.RepoRequest;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.pekko.util.ByteString;

/**
 * A PyPI group's project page ({@code /NAME/<project>/}): the union of its members' files, the
 * first member winning for a file name, in the form of the first member's page (PEP 691 JSON or
 * HTML). Each member's page is already rewritten to the group's URL, so every link points at
 * {@code <group>/-/files/<project>/<filename>}, which the first member listing that file answers.
 *
 * <p>An HTML page is written anew: the anchors as the members wrote them (their {@code href}
 * rewritten, their {@code data-*} attributes kept), one a line. A JSON page keeps the first
 * member's {@code meta} and {@code name}; {@code files} is the union, {@code versions} (API 1.1)
 * too. A member whose page is in the other form than the first's adds nothing (the members of a
 * group are asked the same form; an upstream that does not negotiate may answer the other).
 */
public final class SimplePageMerge implements GroupMerge {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Override
  public Optional<RepoRequest> mergedFrom(RepoRequest request) {
    List<String> s = request.segments();
    return s.size() == 1 && !s.get(0).equals("-") ? Optional.of(request) : Optional.empty();
  }

  @Override
  public Merged merge(RepoRequest request, List<ByteString> bodies) {
    ByteString first = bodies.get(0);
    if (JsonDocuments.looksLikeJson(first)) {
      return json(bodies).map(b -> new Merged(b, PypiRepository.JSON)).orElse(new Merged(first, PypiRepository.JSON));
    }
    return new Merged(html(request.segments().get(0), bodies), "text/html; charset=utf-8");
  }

  private static Optional<ByteString> json(List<ByteString> bodies) {
    try {
      ObjectNode base = null;
      Map<String, JsonNode> files = new LinkedHashMap<>();
      Set<String> versions = new LinkedHashSet<>();
      for (ByteString b : bodies) {
        if (!JsonDocuments.looksLikeJson(b)) {
          continue;
        }
        JsonNode doc;
        try {
          doc = JSON.readTree(b.toArray());
        } catch (java.io.IOException e) {
          continue;
        }
        if (!(doc instanceof ObjectNode o)) {
          continue;
        }
        if (base == null) {
          base = o;
        }
        for (JsonNode f : o.path("files")) {
          String name = f.path("filename").asText("");
          if (!name.isEmpty()) {
            files.putIfAbsent(name, f);
          }
        }
        for (JsonNode v : o.path("versions")) {
          versions.add(v.asText());
        }
      }
      if (base == null) {
        return Optional.empty();
      }
      ArrayNode fileArray = base.putArray("files");
      files.values().forEach(fileArray::add);
      if (base.has("versions")) {
        ArrayNode v = base.putArray("versions");
        versions.forEach(v::add);
      }
      return Optional.of(ByteString.fromArray(JSON.writeValueAsBytes(base)));
    } catch (java.io.IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  /** The anchors of every HTML page, the first one per file name. */
  private static ByteString html(String project, List<ByteString> bodies) {
    Map<String, String> anchors = new LinkedHashMap<>();
    for (ByteString b : bodies) {
      if (JsonDocuments.looksLikeJson(b)) {
        continue;
      }
      String page = b.decodeString(StandardCharsets.ISO_8859_1);
      String lower = page.toLowerCase(Locale.ROOT);
      int i = 0;
      while (true) {
        int start = anchorStart(lower, i);
        if (start < 0) {
          break;
        }
        int close = lower.indexOf("</a>", start);
        int end = close < 0 ? -1 : close + 4;
        if (end < 0) {
          break;
        }
        String anchor = page.substring(start, end);
        i = end;
        fileName(anchor).ifPresent(name -> anchors.putIfAbsent(name, anchor));
      }
    }
    StringBuilder out = new StringBuilder();
    String title = HtmlAnchors.escape(project);
    out.append("<!DOCTYPE html>\n<html>\n  <head>\n")
        .append("    <meta name=\"pypi:repository-version\" content=\"1.0\">\n")
        .append("    <title>Links for ").append(title).append("</title>\n  </head>\n  <body>\n")
        .append("    <h1>Links for ").append(title).append("</h1>\n");
    for (String a : anchors.values()) {
      out.append("    ").append(a).append("<br/>\n");
    }
    out.append("  </body>\n</html>\n");
    return ByteString.fromString(out.toString(), StandardCharsets.ISO_8859_1);
  }

  /** The next {@code <a} start tag (not {@code <abbr}) from {@code from}, skipping comments. */
  private static int anchorStart(String lower, int from) {
    int i = from;
    while (true) {
      int lt = lower.indexOf("<a", i);
      int comment = lower.indexOf("<!--", i);
      if (comment >= 0 && (lt < 0 || comment < lt)) {
        int end = lower.indexOf("-->", comment + 4);
        if (end < 0) {
          return -1;
        }
        i = end + 3;
        continue;
      }
      if (lt < 0) {
        return -1;
      }
      char next = lt + 2 < lower.length() ? lower.charAt(lt + 2) : '>';
      if (Character.isWhitespace(next) || next == '>') {
        return lt;
      }
      i = lt + 2;
    }
  }

  /** The file an anchor links to: the last segment of its {@code href}. */
  private static Optional<String> fileName(String anchor) {
    List<HtmlAnchors.Tag> tags = HtmlAnchors.tags(anchor);
    if (tags.isEmpty()) {
      return Optional.empty();
    }
    return tags.get(0).attribute("href").flatMap(h -> PathSegment.lastOf(h.value().trim()))
        .filter(PathSegment::isPlainName);
  }

  /** For tests: the file names of a merged page, in order. */
  static List<String> fileNames(ByteString page) {
    List<String> out = new ArrayList<>();
    for (HtmlAnchors.Tag t : HtmlAnchors.tags(page.decodeString(StandardCharsets.ISO_8859_1))) {
      t.attribute("href").flatMap(h -> PathSegment.lastOf(h.value().trim())).ifPresent(out::add);
    }
    return out;
  }
}
