package dev.corral.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class PublicBaseTest {
  private static final InetSocketAddress LOCAL = new InetSocketAddress("127.0.0.1", 8080);
  private static final InetSocketAddress PROXY = new InetSocketAddress("127.0.0.2", 40000);
  private static final InetSocketAddress CLIENT = new InetSocketAddress("127.0.1.9", 40000);

  @Test
  void theConfiguredBaseWinsOverEveryHeader() {
    PublicBase base = new PublicBase(Optional.of(URI.create("https://cache.example/corral/")), TrustedProxies.parse("127.0.0.0/30"));
    assertEquals("https://cache.example/corral",
        base.of(LOCAL, PROXY, Optional.of("http"), Optional.of("evil.example")));
  }

  @Test
  void forwardedHeadersAreBelievedOnlyFromATrustedProxy() {
    PublicBase base = new PublicBase(Optional.empty(), TrustedProxies.parse("127.0.0.0/30"));
    assertEquals("https://cache.example:8443",
        base.of(LOCAL, PROXY, Optional.of("https"), Optional.of("cache.example:8443, inner.example")));
    assertEquals("http://127.0.0.1:8080",
        base.of(LOCAL, CLIENT, Optional.of("https"), Optional.of("evil.example")));
  }

  @Test
  void aHostThatCouldBreakOutOfTheUrlIsIgnored() {
    PublicBase base = new PublicBase(Optional.empty(), TrustedProxies.parse("127.0.0.0/30"));
    assertEquals("http://127.0.0.1:8080", base.of(LOCAL, PROXY, Optional.empty(), Optional.of("evil.example/x?")));
    assertEquals("http://127.0.0.1:8080", base.of(LOCAL, PROXY, Optional.empty(), Optional.of("a@evil.example")));
    assertEquals("http://cache.example", base.of(LOCAL, PROXY, Optional.of("javascript"), Optional.of("cache.example")));
  }

  @Test
  void withoutProxiesTheLocalAddressIsTheBase() {
    assertEquals("http://[0:0:0:0:0:0:0:1]:9000",
        PublicBase.local().of(new InetSocketAddress("::1", 9000), CLIENT, Optional.empty(), Optional.of("evil.example")));
  }

  @Test
  void trustedProxiesMatchAddressesAndBlocks() throws Exception {
    TrustedProxies p = TrustedProxies.parse("127.16.0.0/12, 127.0.1.5 ,::/127");
    assertTrue(p.contains(InetAddress.getByName("127.16.0.1")));
    assertTrue(p.contains(InetAddress.getByName("127.0.1.5")));
    assertFalse(p.contains(InetAddress.getByName("127.0.1.6")));
    assertTrue(p.contains(InetAddress.getByName("::1")));
    assertFalse(p.contains(InetAddress.getByName("::2")));
    assertFalse(p.contains(InetAddress.getByName("127.0.0.1")));
    assertTrue(p.contains(InetAddress.getByName("127.31.255.255")));
    assertFalse(p.contains(InetAddress.getByName("127.32.0.0")));
  }

  @Test
  void badEntriesAreRejectedByName() {
    assertEquals("not an address or CIDR block: proxy.example",
        assertThrows(IllegalArgumentException.class, () -> TrustedProxies.parse("proxy.example")).getMessage());
    assertThrows(IllegalArgumentException.class, () -> TrustedProxies.parse("127.0.0.0/33"));
    assertThrows(IllegalArgumentException.class, () -> TrustedProxies.parse("127.0.0.0/x"));
  }
}
