package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.InetSocketAddress;
import org.junit.jupiter.api.Test;

/** Where the node's request to itself goes (FrontDoor.warmUp): a wildcard binding is asked on loopback. */
class FrontDoorWarmUpAuthorityTest {
  @Test
  void aWildcardBindingIsAskedOnLoopbackOfItsFamily() {
    assertEquals("127.0.0.1:8080", FrontDoor.authority(new InetSocketAddress("0.0.0.0", 8080)));
    assertEquals("[::1]:8080", FrontDoor.authority(new InetSocketAddress("::", 8080)));
  }

  @Test
  void anAddressOfItsOwnIsAskedAsItIs() {
    assertEquals("127.0.0.2:9", FrontDoor.authority(new InetSocketAddress("127.0.0.2", 9)));
    assertEquals("[0:0:0:0:0:0:0:1]:9", FrontDoor.authority(new InetSocketAddress("::1", 9)));
  }
}
