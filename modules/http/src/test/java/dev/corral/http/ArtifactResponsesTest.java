package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.corral.core.fetch.Via;
import dev.corral.core.store.HotBlobs;
import dev.corral.core.upstream.Header;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.http.javadsl.model.HttpHeader;
import org.apache.pekko.http.javadsl.model.HttpRequest;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class ArtifactResponsesTest {
  private final ArtifactResponses responses = new ArtifactResponses(null, new HotBlobs(0), Runnable::run);
  private final HttpRequest get = HttpRequest.GET("/r/a");
  private final ByteString body = ByteString.fromString("body");

  private static String header(HttpResponse r, String name) {
    return r.getHeader(name).map(HttpHeader::value).orElse(null);
  }

  /**
   * Each answer replays its own list's headers, however many lists are answered in turn: the
   * answers are built once per list and remembered, and lists that meet at one remembered place
   * (the 64 places are chosen by identity hash) never take each other's.
   */
  @Test
  void everyListOfHeadersIsAnsweredWithItsOwnHeaders() {
    List<List<Header>> lists = new ArrayList<>();
    for (int n = 0; n < 1000; n++) {
      lists.add(List.of(new Header("Content-Type", n % 2 == 0 ? "text/plain" : "application/json"),
          new Header("ETag", "\"" + n + "\""), new Header("Last-Modified", "Tue, 01 Dec 2026 10:00:00 GMT")));
    }
    for (int round = 0; round < 3; round++) {
      for (int n = 0; n < lists.size(); n++) {
        HttpResponse r = responses.bytes(get, Via.HIT, 200, lists.get(n), body);
        assertEquals("\"" + n + "\"", header(r, "ETag"), "list " + n + ", round " + round);
        assertEquals(n % 2 == 0 ? "text/plain" : "application/json", r.entity().getContentType().mediaType().toString(),
            "list " + n);
        assertEquals("HIT", header(r, "X-Cache"));
      }
    }
    // An equal list that is another object is answered the same.
    List<Header> copy = new ArrayList<>(lists.get(7));
    assertEquals("\"7\"", header(responses.bytes(get, Via.HIT, 200, copy, body), "ETag"));
  }
}
