package dev.corral.registry.go;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.registry.RepoRequest;
import java.util.List;
import java.util.Optional;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class VersionListMergeTest {
  private final VersionListMerge merge = new VersionListMerge();

  private static RepoRequest request(String path) {
    return new RepoRequest(List.of(path.split("/")), "/" + path, Optional.empty(), Optional.empty(), "http://c/go");
  }

  @Test
  void theUnionInSemverOrder() {
    String merged = merge.merge(request("example.com/m/@v/list"), List.of(
        ByteString.fromString("v1.10.0\nv1.2.0\n"), ByteString.fromString("v1.2.0\nv1.10.0-rc.1\nv1.9.0\nv0.1.0\n")))
        .body().utf8String();
    assertEquals("v0.1.0\nv1.2.0\nv1.9.0\nv1.10.0-rc.1\nv1.10.0\n", merged);
  }

  @Test
  void onlyTheListIsMerged() {
    assertEquals(true, merge.mergedFrom(request("example.com/m/@v/list")).isPresent());
    assertEquals(Optional.empty(), merge.mergedFrom(request("example.com/m/@latest")));
    assertEquals(Optional.empty(), merge.mergedFrom(request("example.com/m/@v/v1.0.0.info")));
  }
}
