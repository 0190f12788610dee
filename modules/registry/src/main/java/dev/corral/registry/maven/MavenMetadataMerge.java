package dev.corral.registry.maven;

import dev.corral.registry.GroupMerge;
import dev.corral.registry.RepoRequest;
import java.io.ByteArrayOutputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.transform.OutputKeys;
import javax.xml.transform.Transformer;
import javax.xml.transform.TransformerFactory;
import javax.xml.transform.dom.DOMSource;
import javax.xml.transform.stream.StreamResult;
import org.apache.pekko.util.ByteString;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/**
 * A Maven group's {@code maven-metadata.xml}, at any level, merged from its members' (the JDK's
 * XML parser, DTDs refused): the first member's document is the base, and across every member
 * {@code <versions>} is the union (in Maven's version order, {@link MavenVersionOrder}),
 * {@code <latest>} and {@code <release>} the highest any member names, {@code <lastUpdated>} the
 * newest; a group-level document's {@code <plugins>} is the union by prefix, the first member
 * winning. A snapshot version's {@code <snapshot>} and {@code <snapshotVersions>} are the first
 * member's. The checksum files of {@code maven-metadata.xml} ({@code .sha1}, {@code .md5},
 * {@code .sha256}, {@code .sha512}) are computed from the merged bytes, so Maven's check of the
 * document it got passes.
 */
public final class MavenMetadataMerge implements GroupMerge {
  private static final String METADATA = "maven-metadata.xml";
  private static final Map<String, String> CHECKSUMS =
      Map.of("sha1", "SHA-1", "md5", "MD5", "sha256", "SHA-256", "sha512", "SHA-512");

  @Override
  public Optional<RepoRequest> mergedFrom(RepoRequest request) {
    List<String> s = request.segments();
    if (s.isEmpty()) {
      return Optional.empty();
    }
    String file = s.get(s.size() - 1);
    if (file.equals(METADATA)) {
      return Optional.of(request);
    }
    int dot = file.lastIndexOf('.');
    if (dot > 0 && file.substring(0, dot).equals(METADATA) && CHECKSUMS.containsKey(file.substring(dot + 1))) {
      return Optional.of(GroupMerge.sibling(request, METADATA));
    }
    return Optional.empty();
  }

  @Override
  public Merged merge(RepoRequest request, List<ByteString> bodies) {
    ByteString xml = mergeXml(bodies);
    String file = request.segments().get(request.segments().size() - 1);
    if (file.equals(METADATA)) {
      return new Merged(xml, "text/xml");
    }
    String algorithm = CHECKSUMS.get(file.substring(file.lastIndexOf('.') + 1));
    try {
      String hex = HexFormat.of().formatHex(MessageDigest.getInstance(algorithm).digest(xml.toArray()));
      return new Merged(ByteString.fromString(hex), "text/plain");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The merged document; the first body as it is when none can be parsed. */
  static ByteString mergeXml(List<ByteString> bodies) {
    List<Document> docs = new ArrayList<>();
    for (ByteString b : bodies) {
      parse(b).ifPresent(docs::add);
    }
    if (docs.isEmpty()) {
      return bodies.get(0);
    }
    if (docs.size() == 1 && bodies.size() == 1) {
      return bodies.get(0);
    }
    Document base = docs.get(0);
    Element root = base.getDocumentElement();
    Set<String> versions = new LinkedHashSet<>();
    String latest = null;
    String release = null;
    String lastUpdated = null;
    Map<String, Element> plugins = new LinkedHashMap<>();
    boolean anyVersioning = false;
    for (Document d : docs) {
      Element versioning = child(d.getDocumentElement(), "versioning");
      if (versioning != null) {
        anyVersioning = true;
        Element vs = child(versioning, "versions");
        if (vs != null) {
          for (Element v : children(vs, "version")) {
            versions.add(v.getTextContent().trim());
          }
        }
        latest = highest(latest, text(versioning, "latest"));
        release = highest(release, text(versioning, "release"));
        String updated = text(versioning, "lastUpdated");
        if (updated != null && (lastUpdated == null || updated.compareTo(lastUpdated) > 0)) {
          lastUpdated = updated;
        }
      }
      Element ps = child(d.getDocumentElement(), "plugins");
      if (ps != null) {
        for (Element p : children(ps, "plugin")) {
          String prefix = text(p, "prefix");
          if (prefix != null && !plugins.containsKey(prefix)) {
            plugins.put(prefix, p);
          }
        }
      }
    }
    if (anyVersioning) {
      Element versioning = child(root, "versioning");
      if (versioning == null) {
        versioning = (Element) root.appendChild(base.createElement("versioning"));
      }
      set(base, versioning, "latest", latest);
      set(base, versioning, "release", release);
      if (!versions.isEmpty()) {
        List<String> sorted = new ArrayList<>(versions);
        sorted.sort(MavenVersionOrder.INSTANCE);
        Element vs = child(versioning, "versions");
        if (vs == null) {
          vs = (Element) versioning.appendChild(base.createElement("versions"));
        }
        while (vs.getFirstChild() != null) {
          vs.removeChild(vs.getFirstChild());
        }
        for (String v : sorted) {
          vs.appendChild(base.createElement("version")).setTextContent(v);
        }
      }
      set(base, versioning, "lastUpdated", lastUpdated);
    }
    if (!plugins.isEmpty()) {
      Element ps = child(root, "plugins");
      while (ps.getFirstChild() != null) {
        ps.removeChild(ps.getFirstChild());
      }
      for (Element p : plugins.values()) {
        ps.appendChild(base.importNode(p, true));
      }
    }
    return write(base).orElse(bodies.get(0));
  }

  private static String highest(String a, String b) {
    if (a == null || a.isEmpty()) {
      return b;
    }
    if (b == null || b.isEmpty()) {
      return a;
    }
    return MavenVersionOrder.INSTANCE.compare(b, a) > 0 ? b : a;
  }

  /** Sets an existing child's text, or adds the child; nothing when the value is null. */
  private static void set(Document d, Element parent, String name, String value) {
    if (value == null) {
      return;
    }
    Element e = child(parent, name);
    if (e == null) {
      e = (Element) parent.appendChild(d.createElement(name));
    }
    e.setTextContent(value);
  }

  private static Element child(Element parent, String name) {
    List<Element> all = children(parent, name);
    return all.isEmpty() ? null : all.get(0);
  }

  private static List<Element> children(Element parent, String name) {
    List<Element> out = new ArrayList<>();
    NodeList nodes = parent.getChildNodes();
    for (int i = 0; i < nodes.getLength(); i++) {
      Node n = nodes.item(i);
      if (n instanceof Element e && e.getTagName().equals(name)) {
        out.add(e);
      }
    }
    return out;
  }

  private static String text(Element parent, String name) {
    Element e = child(parent, name);
    return e == null ? null : e.getTextContent().trim();
  }

  private static Optional<Document> parse(ByteString body) {
    try {
      DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
      f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
      f.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
      f.setXIncludeAware(false);
      f.setExpandEntityReferences(false);
      DocumentBuilder b = f.newDocumentBuilder();
      b.setErrorHandler(null);
      Document d = b.parse(new java.io.ByteArrayInputStream(body.toArray()));
      return d.getDocumentElement().getTagName().equals("metadata") ? Optional.of(d) : Optional.empty();
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  private static Optional<ByteString> write(Document d) {
    try {
      stripWhitespace(d.getDocumentElement());
      TransformerFactory tf = TransformerFactory.newInstance();
      tf.setFeature(XMLConstants.FEATURE_SECURE_PROCESSING, true);
      Transformer t = tf.newTransformer();
      t.setOutputProperty(OutputKeys.INDENT, "yes");
      t.setOutputProperty(OutputKeys.ENCODING, "UTF-8");
      t.setOutputProperty("{http://xml.apache.org/xslt}indent-amount", "2");
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      t.transform(new DOMSource(d), new StreamResult(out));
      return Optional.of(ByteString.fromArray(out.toByteArray()));
    } catch (Exception e) {
      return Optional.empty();
    }
  }

  /** Whitespace-only text between elements goes, so the indent is the transformer's alone. */
  private static void stripWhitespace(Node n) {
    NodeList nodes = n.getChildNodes();
    for (int i = nodes.getLength() - 1; i >= 0; i--) {
      Node c = nodes.item(i);
      if (c.getNodeType() == Node.TEXT_NODE && c.getTextContent().isBlank() && nodes.getLength() > 1) {
        n.removeChild(c);
      } else if (c.getNodeType() == Node.ELEMENT_NODE) {
        stripWhitespace(c);
      }
    }
  }
}
