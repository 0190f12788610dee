package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client port (plain or HTTPS) that cannot be bound stops the start with one line naming
 * {@code --http-port} ({@code --http-host} for an address not on this machine): a
 * {@link SettingsException}, exit code 2, as for the cluster, peer and management ports.
 */
class HttpBindTest {
  @TempDir Path dir;

  private CorralSettings settings(int httpPort, String... more) {
    List<String> args = new ArrayList<>(List.of("--http-host", "127.0.0.1", "--http-port", String.valueOf(httpPort),
        "--cluster-port", "0", "--peer-port", "0", "--data-dir", dir.resolve("data").toString(),
        "--repo", "up=generic:http://127.0.0.1:1/"));
    args.addAll(List.of(more));
    return CorralSettings.load(args.toArray(String[]::new), Map.of());
  }

  private static SettingsException refused(CorralSettings settings) {
    SettingsException e = assertThrows(SettingsException.class, () -> CorralServer.start(settings).close());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    return e;
  }

  @Test
  void anHttpPortInUseNamesTheSettingAndTheNodeStartsOnceItIsFree() throws Exception {
    int port;
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = taken.getLocalPort();
      SettingsException e = refused(settings(port));
      assertEquals("--http-port", e.setting());
      assertTrue(e.getMessage().startsWith("--http-port: cannot listen on 127.0.0.1:" + port + " ("), e.getMessage());
      assertTrue(e.getMessage().contains("in use"), e.getMessage());
    }
    // Nothing of the failed start is left in the way: the same data directory starts.
    try (CorralServer server = CorralServer.start(settings(0))) {
      assertTrue(server.address().getPort() > 0);
    }
  }

  @Test
  void anHttpsPortInUseNamesTheSetting() throws Exception {
    TestCertificates.Pair pair = TestCertificates.newCa(dir, "ca").leaf("node", KeyFormat.EC_SEC1);
    for (String http2 : List.of("on", "off")) {
      try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        int port = taken.getLocalPort();
        SettingsException e = refused(settings(port, "--tls-cert", pair.cert().toString(), "--tls-key",
            pair.key().toString(), "--tls-http2", http2));
        assertEquals("--http-port", e.setting());
        assertTrue(e.getMessage().startsWith("--http-port: cannot listen on 127.0.0.1:" + port + " ("), e.getMessage());
      }
    }
  }

  @Test
  void anAddressNotOnThisMachineIsAnErrorOfTheHost() {
    // As Pekko fails a bind: the BindException under its own, under the future's. Only local
    // look-ups: the address is a literal (TEST-NET-1), never bound or reached.
    Exception bind = new java.util.concurrent.ExecutionException(new IllegalStateException("Bind failed",
        new java.net.BindException("Cannot assign requested address")));
    Exception e = CorralServer.cannotListen("192.0.2.10", 8080, bind);
    assertEquals("--http-host: cannot listen on 192.0.2.10:8080 (Cannot assign requested address)", e.getMessage());
    assertEquals("--http-port: cannot listen on [::1]:80 (Permission denied)", CorralServer.cannotListen("::1", 80,
        new java.util.concurrent.ExecutionException(new java.net.BindException("Permission denied"))).getMessage());
    assertEquals("--http-port", ((SettingsException) CorralServer.cannotListen("0.0.0.0", 80, bind)).setting());
    Exception other = new java.util.concurrent.ExecutionException(new IllegalStateException("something else"));
    assertTrue(CorralServer.cannotListen("127.0.0.1", 80, other) == other, "not a bind failure: as it was");
  }
}
