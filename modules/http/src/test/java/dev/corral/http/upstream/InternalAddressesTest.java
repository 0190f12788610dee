package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The address rule on address literals only: nothing here resolves a name or connects. */
class InternalAddressesTest {

  @Test
  void refusesLoopbackLinkLocalPrivateSharedUniqueLocalUnspecifiedAndMulticast() {
    for (String a : List.of(
        "127.0.0.1", "127.255.255.254", "0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "172.16.0.1",
        "172.31.255.255", "192.168.1.1", "169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.255",
        "100.100.100.200", "192.0.0.192", "198.18.0.1", "224.0.0.1", "239.255.255.250", "255.255.255.255",
        "::", "::1", "fe80::1", "febf::1", "fc00::1", "fd00:ec2::254", "ff02::1", "fec0::1")) {
      assertTrue(InternalAddresses.contains(InternalAddresses.literal(a)), a);
    }
  }

  @Test
  void refusesIpv6FormsThatCarryAnInternalIpv4Address() {
    for (String a : List.of("::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.1.2.3", "::127.0.0.1",
        "::10.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "2002:7f00:1::", "2002:a9fe:a9fe::1",
        "2002:c0a8:101::")) {
      assertTrue(InternalAddresses.contains(InternalAddresses.literal(a)), a);
    }
  }

  @Test
  void allowsPublicAddressesAndTheirIpv6Forms() {
    for (String a : List.of("8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "100.63.255.255",
        "100.128.0.1", "169.253.1.1", "192.167.1.1", "11.0.0.1", "223.255.255.254", "198.20.0.1",
        "2001:db8::1", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::", "fe7f::1")) {
      assertFalse(InternalAddresses.contains(InternalAddresses.literal(a)), a);
    }
  }
}
