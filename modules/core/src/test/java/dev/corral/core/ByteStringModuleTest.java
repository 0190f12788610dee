package dev.corral.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.cbor.CBORFactory;
import com.fasterxml.jackson.module.paramnames.ParameterNamesModule;
import com.fasterxml.jackson.module.scala.DefaultScalaModule$;
import dev.corral.core.fetch.FetchEntity;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * A ByteString inside a reply survives a round trip whatever the order of the Jackson modules:
 * the shaded server jar merges the reference.conf files so that this module is registered before
 * Pekko's (jackson-module-scala last), which a plain classpath does not.
 */
class ByteStringModuleTest {
  private static ObjectMapper mapper(boolean scalaModuleLast) {
    ObjectMapper m = new ObjectMapper(new CBORFactory());
    m.registerModule(new ParameterNamesModule());
    if (scalaModuleLast) {
      m.registerModule(new ByteStringModule());
      m.registerModule(DefaultScalaModule$.MODULE$);
    } else {
      m.registerModule(DefaultScalaModule$.MODULE$);
      m.registerModule(new ByteStringModule());
    }
    return m;
  }

  @Test
  void anInlineReplyRoundTripsWhenTheScalaModuleIsRegisteredLast() throws Exception {
    roundTrip(mapper(true));
  }

  @Test
  void anInlineReplyRoundTripsWhenThisModuleIsRegisteredLast() throws Exception {
    roundTrip(mapper(false));
  }

  private static void roundTrip(ObjectMapper m) throws Exception {
    ByteString body = ByteString.fromString("abc").concat(ByteString.fromArray(new byte[] {0, -1, 7}));
    var sent = new FetchEntity.Inline(FetchEntity.Via.COALESCED, 200, List.of(new Header("ETag", "\"v\"")), body,
        "a".repeat(64));
    byte[] wire = m.writeValueAsBytes(sent);
    var back = m.readValue(wire, FetchEntity.Inline.class);
    assertArrayEquals(body.toArray(), back.bytes().toArray());
    assertEquals(sent, back);
  }
}
