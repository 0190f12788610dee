package dev.corral.registry.maven;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.registry.RepoRequest;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class MavenMetadataMergeTest {
  private final MavenMetadataMerge merge = new MavenMetadataMerge();

  private static RepoRequest request(String path) {
    return new RepoRequest(List.of(path.split("/")), "/" + path, Optional.empty(), Optional.empty(), "http://c/m2");
  }

  private static ByteString metadata(String latest, String release, String updated, String... versions) {
    StringBuilder v = new StringBuilder();
    for (String s : versions) {
      v.append("<version>").append(s).append("</version>");
    }
    return ByteString.fromString("""
        <?xml version="1.0" encoding="UTF-8"?>
        <metadata>
          <groupId>org.example</groupId>
          <artifactId>lib</artifactId>
          <versioning>
            <latest>%s</latest>
            <release>%s</release>
            <versions>%s</versions>
            <lastUpdated>%s</lastUpdated>
          </versioning>
        </metadata>
        """.formatted(latest, release, v, updated));
  }

  private String merged(ByteString... bodies) {
    return merge.merge(request("org/example/lib/maven-metadata.xml"), List.of(bodies)).body().utf8String();
  }

  private static List<String> versions(String xml) {
    return java.util.regex.Pattern.compile("<version>([^<]*)</version>").matcher(xml).results()
        .map(m -> m.group(1)).toList();
  }

  @Test
  void versionsAreTheUnionInMavenOrderAndLatestReleaseLastUpdatedTheHighest() {
    String xml = merged(metadata("1.10", "1.10", "20260101000000", "1.2", "1.10"),
        metadata("2.0-rc1", "1.9", "20260301000000", "1.2", "1.9", "2.0-rc1"));
    assertEquals(List.of("1.2", "1.9", "1.10", "2.0-rc1"), versions(xml));
    assertTrue(xml.contains("<latest>2.0-rc1</latest>"), xml);
    assertTrue(xml.contains("<release>1.10</release>"), "1.10 > 1.9 as versions, not as text: " + xml);
    assertTrue(xml.contains("<lastUpdated>20260301000000</lastUpdated>"), xml);
    assertTrue(xml.contains("<groupId>org.example</groupId>"), xml);
  }

  @Test
  void theMergeIsDeterministicAndItsChecksumIsOfTheMergedBytes() throws Exception {
    ByteString a = metadata("1.0", "1.0", "20260101000000", "1.0");
    ByteString b = metadata("1.1", "1.1", "20260102000000", "1.1");
    String xml = merged(a, b);
    assertEquals(xml, merged(a, b));
    String sha1 = merge.merge(request("org/example/lib/maven-metadata.xml.sha1"), List.of(a, b)).body().utf8String();
    assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(xml.getBytes(StandardCharsets.UTF_8))),
        sha1);
    assertEquals(Optional.of(List.of("org", "example", "lib", "maven-metadata.xml")),
        merge.mergedFrom(request("org/example/lib/maven-metadata.xml.sha256")).map(RepoRequest::segments));
    assertEquals(Optional.empty(), merge.mergedFrom(request("org/example/lib/1.0/lib-1.0.jar")));
  }

  @Test
  void aBodyThatIsNotMetadataAddsNothingAndAloneIsAnsweredAsItIs() {
    ByteString good = metadata("1.0", "1.0", "20260101000000", "1.0");
    ByteString junk = ByteString.fromString("<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><metadata>&e;</metadata>");
    assertEquals(List.of("1.0"), versions(merged(junk, good)));
    assertEquals("not xml", merged(ByteString.fromString("not xml")));
  }

  @Test
  void pluginPrefixesAreTheUnionTheFirstMemberWinning() {
    ByteString a = ByteString.fromString("<metadata><plugins><plugin><name>A</name><prefix>x</prefix>"
        + "<artifactId>a-x</artifactId></plugin></plugins></metadata>");
    ByteString b = ByteString.fromString("<metadata><plugins><plugin><name>B</name><prefix>x</prefix>"
        + "<artifactId>b-x</artifactId></plugin><plugin><name>Y</name><prefix>y</prefix>"
        + "<artifactId>b-y</artifactId></plugin></plugins></metadata>");
    String xml = merged(a, b);
    assertTrue(xml.contains("a-x") && xml.contains("b-y") && !xml.contains("b-x"), xml);
  }

  @Test
  void versionOrder() {
    List<String> sorted = new java.util.ArrayList<>(List.of("1.0", "1.0-SNAPSHOT", "1.0-alpha-1", "1.0-beta", "1.0-rc1",
        "1.0.1", "1.10", "1.9", "1.0-sp1"));
    sorted.sort(MavenVersionOrder.INSTANCE);
    assertEquals(List.of("1.0-alpha-1", "1.0-beta", "1.0-rc1", "1.0-SNAPSHOT", "1.0", "1.0-sp1", "1.0.1", "1.9", "1.10"),
        sorted);
    assertEquals(0, MavenVersionOrder.INSTANCE.compare("1.0", "1.0.0"));
  }
}
