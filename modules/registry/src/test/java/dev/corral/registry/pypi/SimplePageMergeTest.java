package dev.corral.registry.pypi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.registry.RepoRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class SimplePageMergeTest {
  private final SimplePageMerge merge = new SimplePageMerge();
  private static final RepoRequest PAGE =
      new RepoRequest(List.of("demo"), "/demo", Optional.empty(), Optional.empty(), "http://c/py");

  private static String anchor(String file, String hash) {
    return "<a href=\"http://c/py/-/files/demo/" + file + "#sha256=" + hash + "\" data-requires-python=\"&gt;=3.8\">"
        + file + "</a>";
  }

  @Test
  void htmlPagesAreTheUnionTheFirstMemberWinningPerFileName() {
    ByteString a = ByteString.fromString("<html><body>" + anchor("demo-1.0.tar.gz", "aa") + "<br/>\n"
        + "<!-- <a href=\"x/demo-0.1.tar.gz\">old</a> -->" + anchor("demo-1.1.tar.gz", "ab") + "</body></html>");
    ByteString b = ByteString.fromString("<html><body>" + anchor("demo-1.0.tar.gz", "bb") + anchor("demo-2.0.tar.gz", "bc")
        + "</body></html>");
    ByteString merged = merge.merge(PAGE, List.of(a, b)).body();
    assertEquals(List.of("demo-1.0.tar.gz", "demo-1.1.tar.gz", "demo-2.0.tar.gz"), SimplePageMerge.fileNames(merged));
    String html = merged.utf8String();
    assertTrue(html.contains("demo-1.0.tar.gz#sha256=aa") && !html.contains("#sha256=bb"), html);
    assertTrue(html.contains("data-requires-python=\"&gt;=3.8\""), "attributes kept as written: " + html);
    assertEquals(merged, merge.merge(PAGE, List.of(a, b)).body(), "deterministic");
  }

  @Test
  void jsonPagesAreTheUnionOfFiles() throws Exception {
    ByteString a = ByteString.fromString("""
        {"meta":{"api-version":"1.1"},"name":"demo","versions":["1.0"],
         "files":[{"filename":"demo-1.0.tar.gz","url":"http://c/py/-/files/demo/demo-1.0.tar.gz","hashes":{"sha256":"aa"}}]}""");
    ByteString b = ByteString.fromString("""
        {"meta":{"api-version":"1.1"},"name":"demo","versions":["1.0","2.0"],
         "files":[{"filename":"demo-1.0.tar.gz","url":"http://c/py/-/files/demo/demo-1.0.tar.gz","hashes":{"sha256":"bb"}},
                  {"filename":"demo-2.0.tar.gz","url":"http://c/py/-/files/demo/demo-2.0.tar.gz","hashes":{"sha256":"bc"}}]}""");
    var m = merge.merge(PAGE, List.of(a, b));
    assertEquals(PypiRepository.JSON, m.contentType());
    JsonNode doc = new ObjectMapper().readTree(m.body().toArray());
    List<String> files = new ArrayList<>();
    doc.path("files").forEach(f -> files.add(f.path("filename").asText() + "=" + f.path("hashes").path("sha256").asText()));
    assertEquals(List.of("demo-1.0.tar.gz=aa", "demo-2.0.tar.gz=bc"), files);
    assertEquals("[\"1.0\",\"2.0\"]", doc.path("versions").toString());
  }

  @Test
  void onlyProjectPagesAreMerged() {
    assertTrue(merge.mergedFrom(PAGE).isPresent());
    assertEquals(Optional.empty(), merge.mergedFrom(new RepoRequest(List.of("-", "files", "demo", "demo-1.0.tar.gz"),
        "/-/files/demo/demo-1.0.tar.gz", Optional.empty(), Optional.empty(), "http://c/py")));
  }
}
