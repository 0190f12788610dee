package dev.corral.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * The start-up refusal (issue 12, item 1): a cluster host that is not a loopback address needs
 * the cluster's identity or an explicit --cluster-insecure. Only literals are checked here (no
 * name is looked up); nothing binds or connects.
 */
class ClusterExposureTest {
  private static ClusterSettings on(String host, Optional<ClusterTls> tls, boolean insecure) {
    return new ClusterSettings(host, 0, List.of(), ClusterSettings.Discovery.NONE, Optional.empty(), "127.0.0.1",
        OptionalInt.empty(), tls, insecure, 0, 100, dev.corral.core.fetch.FanOut.DEFAULT);
  }

  @Test
  void loopbackInAnyFormIsLoopback() {
    for (String h : List.of("127.0.0.1", "127.1.2.3", "2130706433", "::1", "[::1]", "::ffff:127.0.0.1",
        "[::ffff:127.0.0.1]")) {
      assertTrue(ClusterSettings.isLoopback(h), h);
    }
  }

  @Test
  void wildcardPrivateAndPublicAddressesAreNot() {
    for (String h : List.of("0.0.0.0", "::", "[::]", "10.0.0.5", "192.168.1.20", "169.254.169.254", "192.0.2.10",
        "fd00::1", "", " ")) {
      assertFalse(ClusterSettings.isLoopback(h), h);
    }
  }

  @Test
  void aNonLoopbackHostIsRefusedInOneLineNamingBothFlags() {
    Optional<String> problem = on("192.0.2.10", Optional.empty(), false).exposureProblem();
    assertTrue(problem.isPresent());
    assertFalse(problem.get().contains("\n"), "one line");
    assertTrue(problem.get().contains("--cluster-tls-dir"), problem.get());
    assertTrue(problem.get().contains("--cluster-insecure"), problem.get());
    assertTrue(problem.get().contains("192.0.2.10"), problem.get());
  }

  @Test
  void theIdentityOrTheExplicitInsecureFlagOrALoopbackHostLetItStart() {
    assertEquals(Optional.empty(), on("192.0.2.10", Optional.of(new ClusterTls(Path.of("tls"))), false).exposureProblem());
    assertEquals(Optional.empty(), on("192.0.2.10", Optional.empty(), true).exposureProblem());
    assertEquals(Optional.empty(), on("127.0.0.1", Optional.empty(), false).exposureProblem());
  }
}
