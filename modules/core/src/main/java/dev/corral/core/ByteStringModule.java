package dev.corral.core;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JsonDeserialize;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.fasterxml.jackson.databind.deser.std.StdDeserializer;
import com.fasterxml.jackson.databind.module.SimpleModule;
import com.fasterxml.jackson.databind.ser.std.StdSerializer;
import java.io.IOException;
import org.apache.pekko.util.ByteString;

/**
 * Lets Pekko's jackson-cbor serializer carry a Pekko {@link ByteString} (a small body inside a
 * reply to another node): written as one CBOR byte string, streamed from the ByteString's own
 * chunks (no intermediate array); read back as the array Jackson decoded, wrapped without a copy.
 * Registered through {@code pekko.serialization.jackson.jackson-modules} in this module's
 * {@code reference.conf}.
 *
 * <p>The reader and writer are attached to {@link ByteString} as class annotations (a mix-in),
 * which Jackson consults before any module's serializers: a module registered later wins
 * otherwise, and jackson-module-scala (in Pekko's list) would then read a ByteString as a Scala
 * collection and fail the reply's constructor. Where this module lands in that list depends on
 * how the {@code reference.conf} files are merged (the shaded server jar puts it first).
 */
public final class ByteStringModule extends SimpleModule {
  public ByteStringModule() {
    super("corral-bytestring");
    addSerializer(ByteString.class, new Writer());
    addDeserializer(ByteString.class, new Reader());
    setMixInAnnotation(ByteString.class, AsCborBytes.class);
  }

  @JsonSerialize(using = Writer.class)
  @JsonDeserialize(using = Reader.class)
  private abstract static class AsCborBytes {}

  private static final class Writer extends StdSerializer<ByteString> {
    Writer() {
      super(ByteString.class);
    }

    @Override
    public void serialize(ByteString value, JsonGenerator gen, SerializerProvider provider) throws IOException {
      gen.writeBinary(value.iterator().asInputStream(), value.size());
    }
  }

  private static final class Reader extends StdDeserializer<ByteString> {
    Reader() {
      super(ByteString.class);
    }

    @Override
    public ByteString deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      return ByteString.fromArrayUnsafe(p.getBinaryValue()); // Jackson hands over a fresh array
    }
  }
}
