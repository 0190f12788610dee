package dev.corral.registry.pypi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class HtmlAnchorsTest {

  static String latin1(String utf8) {
    return new String(utf8.getBytes(StandardCharsets.UTF_8), StandardCharsets.ISO_8859_1);
  }

  @Test
  void attributesInEveryQuotingStyleWithTheirPositions() {
    String page = "<p title='<a href=\"no\">'>x</p><A Href = 'a&amp;b.whl' data-x=\"1\"><a href=c.whl/><a name=z>";
    List<HtmlAnchors.Tag> tags = HtmlAnchors.tags(page);
    assertEquals(3, tags.size(), "an anchor inside another tag's attribute value is not a tag");
    HtmlAnchors.Attribute href = tags.get(0).attribute("href").orElseThrow();
    assertEquals("a&b.whl", href.value());
    assertEquals("Href = 'a&amp;b.whl'", page.substring(href.start(), href.end()));
    assertEquals("1", tags.get(0).attribute("data-x").orElseThrow().value());
    assertEquals("c.whl/", tags.get(1).attribute("href").orElseThrow().value(), "unquoted ends at space or '>'");
    assertEquals(Optional.empty(), tags.get(2).attribute("href"));
  }

  @Test
  void commentsAndBrokenTagsAreSkipped() {
    assertEquals(0, HtmlAnchors.tags("<!-- <a href=x> --><!DOCTYPE html></a> 1 < 2").size());
    assertEquals(0, HtmlAnchors.tags("<!-- unterminated <a href=x>").size());
    List<HtmlAnchors.Tag> cut = HtmlAnchors.tags("<a href=\"ok\"><a href=\"unterminated");
    assertEquals("ok", cut.get(0).attribute("href").orElseThrow().value());
    assertEquals(Optional.empty(), cut.get(1).attribute("href"), "an unterminated value is no value");
  }

  @Test
  void characterReferencesAndUtf8Decode() {
    assertEquals("<>\"'&", HtmlAnchors.decodeEntities("&lt;&gt;&quot;&apos;&amp;"));
    assertEquals("&unknown; & &", HtmlAnchors.decodeEntities("&unknown; & &#38;"));
    assertEquals("é☃", HtmlAnchors.text(HtmlAnchors.decodeEntities("&#xE9;&#9731;")));
    assertEquals("é", HtmlAnchors.text(latin1("é")), "raw UTF-8 bytes in a page read as text");
    assertEquals("&#xZZ;", HtmlAnchors.decodeEntities("&#xZZ;"));
  }
}
