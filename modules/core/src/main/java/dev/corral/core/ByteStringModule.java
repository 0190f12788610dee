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
 * <p>A Pekko ByteString is also a Scala {@code IndexedSeq[Byte]}, which jackson-module-scala
 * (also in that list) claims as a sequence: whichever module is registered last wins, and the
 * order of that list depends on how the reference.conf files were merged (the shaded server jar
 * puts this one first). Class and field annotations beat any module, whatever the order: the
 * module attaches {@link Writer} and {@link Reader} to {@link ByteString} as a mix-in, and the
 * message fields that carry bytes name them with {@code @JsonSerialize}/{@code @JsonDeserialize}
 * too (two independent fixes found the same bug; either alone passes SerializationTest).
 */
public final class ByteStringModule extends SimpleModule {
  public ByteStringModule() {
    super("corral-bytestring");
    addSerializer(ByteString.class, new Writer());
    addDeserializer(ByteString.class, new Reader());
    setMixInAnnotation(ByteString.class, Annotated.class);
  }

  @JsonSerialize(using = Writer.class)
  @JsonDeserialize(using = Reader.class)
  private abstract static class Annotated {}

  /** Writes a ByteString as one CBOR byte string. */
  public static final class Writer extends StdSerializer<ByteString> {
    public Writer() {
      super(ByteString.class);
    }

    @Override
    public void serialize(ByteString value, JsonGenerator gen, SerializerProvider provider) throws IOException {
      gen.writeBinary(value.iterator().asInputStream(), value.size());
    }
  }

  /** Reads one byte string into a ByteString. */
  public static final class Reader extends StdDeserializer<ByteString> {
    public Reader() {
      super(ByteString.class);
    }

    @Override
    public ByteString deserialize(JsonParser p, DeserializationContext ctxt) throws IOException {
      return ByteString.fromArrayUnsafe(p.getBinaryValue()); // Jackson hands over a fresh array
    }
  }
}
