package dev.corral.registry.generic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class QueryPolicyTest {

  @Test
  void keepDropAndAListAreParsed() {
    assertInstanceOf(QueryPolicy.Keep.class, QueryPolicy.parse(List.of("keep")));
    assertInstanceOf(QueryPolicy.Drop.class, QueryPolicy.parse(List.of(" DROP ")));
    assertEquals("arch,v", QueryPolicy.parse(List.of("v, arch")).describe());
    assertEquals("arch,v", QueryPolicy.parse(List.of("v", "arch")).describe());
  }

  @Test
  void badListsAreOneLineErrors() {
    for (List<String> bad : List.of(List.of(""), List.of("a=b"), List.of("a&b"), List.of("v,,w"), List.<String>of())) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> QueryPolicy.parse(bad), bad::toString);
      assertEquals(-1, e.getMessage().indexOf('\n'));
    }
  }

  @Test
  void aListKeepsTheNamedParametersAsWrittenOrderedByName() {
    QueryPolicy only = QueryPolicy.parse(List.of("v", "a.b"));
    assertEquals(Optional.of("a%2Eb=1&v=2&v=1"), only.apply(Optional.of("v=2&x=9&a%2Eb=1&v=1")));
    assertEquals(Optional.empty(), only.apply(Optional.of("x=1&%zz=2")), "nothing named: no query at all");
    assertEquals(Optional.of("v"), only.apply(Optional.of("v")));
  }

  @Test
  void keepAndDrop() {
    assertEquals(Optional.of("a=1&b"), QueryPolicy.keep().apply(Optional.of("a=1&b")));
    assertEquals(Optional.empty(), QueryPolicy.keep().apply(Optional.of("")));
    assertEquals(Optional.empty(), new QueryPolicy.Drop().apply(Optional.of("a=1")));
  }
}
