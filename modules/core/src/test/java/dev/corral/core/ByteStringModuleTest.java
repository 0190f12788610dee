package dev.corral.core;

import dev.corral.core.fetch.Reply;
import dev.corral.core.fetch.Via;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.cbor.CBORFactory;
import com.fasterxml.jackson.module.scala.DefaultScalaModule;
import dev.corral.core.upstream.Header;
import java.util.List;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

class ByteStringModuleTest {

  /**
   * In the shaded server jar Corral's reference.conf comes before Pekko's, so the Scala module is
   * registered after this one and is asked first; it must not take a ByteString for a collection.
   */
  @Test
  void aByteStringRoundTripsWhenTheScalaModuleIsRegisteredAfterIt() throws Exception {
    ObjectMapper mapper = new ObjectMapper(new CBORFactory())
        .registerModule(new ByteStringModule())
        .registerModule(new DefaultScalaModule());
    var message = new Reply.Body(Via.MISS, List.of(new Header("ETag", "\"x\"")),
        ByteString.fromString("hello").concat(ByteString.fromString(" world")));
    byte[] bytes = mapper.writeValueAsBytes(message);
    assertEquals(message, mapper.readValue(bytes, Reply.Body.class));
    var empty = new Reply.Body(Via.HIT, List.of(), ByteString.emptyByteString());
    assertEquals(empty, mapper.readValue(mapper.writeValueAsBytes(empty), Reply.Body.class));
  }
}
