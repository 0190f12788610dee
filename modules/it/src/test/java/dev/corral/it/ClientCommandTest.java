package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import org.junit.jupiter.api.Test;

/** How {@link ClientCommand#runLoopbackOnly} reads strace's lines (as strace 6.1 writes them). */
class ClientCommandTest {

  @Test
  void loopbackUnixAndNetlinkAreLocalEverythingElseIsNot() {
    List<String> lines = List.of(
        "7333  connect(21, {sa_family=AF_INET, sin_port=htons(41227), sin_addr=inet_addr(\"127.0.0.1\")}, 16) = -1 EINPROGRESS",
        "7340  connect(5, {sa_family=AF_INET6, sin6_port=htons(8080), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"::1\", &sin6_addr), sin6_scope_id=0}, 28) = 0",
        "7341  connect(6, {sa_family=AF_UNIX, sun_path=\"/run/dbus/system_bus_socket\"}, 110) = -1 ENOENT",
        "7333  sendto(18, [{nlmsg_len=20, nlmsg_type=RTM_GETLINK}], 20, 0, {sa_family=AF_NETLINK, nl_pid=0, nl_groups=00000000}, 12) = 20",
        "7342  connect(7, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr(\"192.0.2.53\")}, 16) = 0",
        "7343  sendto(8, \"\\x12\\x34\", 2, 0, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, \"2001:db8::1\", &sin6_addr), sin6_scope_id=0}, 28) = 2",
        "7344  connect(9, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr(\"127.0.0.2\")}, 16) = -1 ECONNREFUSED",
        "7345  connect(10, {sa_family=AF_INET, sin_port=htons(80), sin_addr=something_new}, 16) = 0");
    assertEquals(List.of("192.0.2.53", "2001:db8::1", "127.0.0.2",
        "sa_family=AF_INET, sin_port=htons(80), sin_addr=something_new"), ClientCommand.nonLoopbackAddresses(lines));
  }
}
