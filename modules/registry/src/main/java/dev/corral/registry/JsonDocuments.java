package dev.corral.registry;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import java.io.IOException;
import java.io.InputStream;
import java.util.function.BiFunction;
import org.apache.pekko.util.ByteString;

/**
 * Registry JSON documents (packuments, PEP 691 pages) read and rewritten as token streams: a
 * packument can be tens of MiB, and a tree of it several times that on the heap.
 */
public final class JsonDocuments {
  private JsonDocuments() {}

  /** Jackson's default 20M-char string limit is too small for some packuments' readmes. */
  static final JsonFactory FACTORY = JsonFactory.builder()
      .streamReadConstraints(StreamReadConstraints.builder()
          .maxStringLength(256 * 1024 * 1024)
          .maxNestingDepth(200)
          .build())
      .build();

  public static JsonParser parser(ByteString body) throws IOException {
    if (body.isCompact()) {
      return FACTORY.createParser(body.toArrayUnsafe());
    }
    // Chunks joined without copying (a body read from a stream): read them as they are.
    InputStream in = body.iterator().asInputStream();
    return FACTORY.createParser(in);
  }

  /** Whether a body looks like JSON (first non-blank byte, after a BOM, is '{'). */
  public static boolean looksLikeJson(ByteString body) {
    int i = 0;
    if (body.length() >= 3 && (body.apply(0) & 0xff) == 0xEF && (body.apply(1) & 0xff) == 0xBB
        && (body.apply(2) & 0xff) == 0xBF) {
      i = 3;
    }
    for (; i < body.length(); i++) {
      byte b = body.apply(i);
      if (b == ' ' || b == '\t' || b == '\r' || b == '\n') {
        continue;
      }
      return b == '{';
    }
    return false;
  }

  /**
   * Copies a document token by token, replacing string values: {@code replace(context, value)}
   * is asked for every string value (its context names where it is) and returns the value to
   * write. Numbers are copied as written. Throws on malformed JSON.
   */
  public static ByteString rewriteStrings(ByteString body, BiFunction<JsonStreamContext, String, String> replace)
      throws IOException {
    ByteStringOutput out = new ByteStringOutput(body.length() + 1024L);
    try (JsonParser p = parser(body); JsonGenerator g = FACTORY.createGenerator(out)) {
      JsonToken t;
      while ((t = p.nextToken()) != null) {
        switch (t) {
          case VALUE_STRING -> g.writeString(replace.apply(p.getParsingContext(), p.getText()));
          case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> g.writeNumber(p.getText());
          default -> g.copyCurrentEvent(p);
        }
      }
    }
    return out.result();
  }

  /** The field name {@code up} levels above a value's own context (0 = the value's own field). */
  public static String nameAt(JsonStreamContext context, int up) {
    JsonStreamContext c = context;
    for (int i = 0; i < up && c != null; i++) {
      c = c.getParent();
    }
    return c == null ? null : c.getCurrentName();
  }

  /** How deep a context is: the root value's context is 0. */
  public static int depth(JsonStreamContext context) {
    int d = -1;
    for (JsonStreamContext c = context; c != null; c = c.getParent()) {
      d++;
    }
    return d;
  }
}
