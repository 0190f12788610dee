package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --discovery config} finds the contact points only in the configuration
 * ({@code pekko.discovery.config.services.corral.endpoints}); without them Cluster Bootstrap
 * never finds a node and the node is never ready. Refused at the start with one line naming
 * {@code --discovery} and the missing path, before anything is bound or created.
 */
class DiscoveryConfigTest {
  private static final String ENDPOINTS = "pekko.discovery.config.services.corral.endpoints";

  @TempDir Path dir;

  private CorralSettings settings(String hocon, String... more) throws Exception {
    Path config = dir.resolve("corral.conf");
    Files.writeString(config, hocon);
    List<String> args = new ArrayList<>(List.of("--http-host", "127.0.0.1", "--http-port", "0", "--cluster-port", "0",
        "--peer-port", "0", "--management-port", "0", "--data-dir", dir.resolve("data").toString(),
        "--repo", "up=generic:http://127.0.0.1:1/", "--config", config.toString(), "--discovery", "config"));
    args.addAll(List.of(more));
    return CorralSettings.load(args.toArray(String[]::new), Map.of());
  }

  private String refused(String hocon) throws Exception {
    CorralSettings settings = settings(hocon);
    SettingsException e = assertThrows(SettingsException.class, () -> CorralServer.start(settings).close());
    assertEquals("--discovery", e.setting());
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    assertFalse(Files.exists(dir.resolve("data")), "refused before the data directory is made");
    return e.getMessage();
  }

  private static final String HOW = "; list the nodes' management endpoints there in the --config file, e.g. "
      + ENDPOINTS + " = [{ host = \"127.0.0.1\", port = 7626 }, { host = \"127.0.0.1\", port = 7636 }]";

  @Test
  void configDiscoveryWithoutContactPointsIsRefused() throws Exception {
    assertEquals("--discovery: config discovery takes its contact points from " + ENDPOINTS + ", which is not set"
        + HOW, refused(""));
    assertEquals("--discovery: config discovery takes its contact points from " + ENDPOINTS + ", which is not set"
        + HOW, refused("pekko.discovery.config.services.other.endpoints = [{ host = \"127.0.0.1\", port = 7626 }]"));
  }

  @Test
  void anEmptyListOrAnEndpointWithoutAHostIsRefused() throws Exception {
    assertEquals("--discovery: config discovery takes its contact points from " + ENDPOINTS + ", which is empty"
        + HOW, refused(ENDPOINTS + " = []"));
    assertEquals("--discovery: config discovery takes its contact points from " + ENDPOINTS
        + ", whose entry 2 has no host" + HOW,
        refused(ENDPOINTS + " = [{ host = \"127.0.0.1\", port = 7626 }, { port = 7636 }]"));
    assertEquals("--discovery: config discovery takes its contact points from " + ENDPOINTS
        + ", which is not a list of endpoints" + HOW, refused(ENDPOINTS + " = \"127.0.0.1:7626\""));
  }

  @Test
  void theServiceNameOfThePekkoSettingsIsTheOneLookedFor() throws Exception {
    String renamed = "pekko.management.cluster.bootstrap.contact-point-discovery.service-name = cache\n";
    String message = refused(renamed + ENDPOINTS + " = [{ host = \"127.0.0.1\", port = 7626 }]");
    assertEquals("--discovery: config discovery takes its contact points from"
        + " pekko.discovery.config.services.cache.endpoints, which is not set", message.substring(0, message.indexOf(';')));
    CorralSettings ok = settings(renamed
        + "pekko.discovery.config.services.cache.endpoints = [{ host = \"127.0.0.1\", port = 7626 }]");
    ConfigDiscovery.check(CorralServer.pekkoConfig(ok, dir), ok.cluster()); // no exception
  }

  @Test
  void contactPointsListedAreAccepted() throws Exception {
    CorralSettings ok = settings(ENDPOINTS + " = [{ host = \"127.0.0.1\", port = 7626 }, { host = \"127.0.0.1\" }]");
    ConfigDiscovery.check(CorralServer.pekkoConfig(ok, dir), ok.cluster());
    // Other ways to join need no contact points.
    CorralSettings seeds = CorralSettings.load(new String[] {"--repo", "up=generic:http://127.0.0.1:1/",
        "--seed-nodes", "127.0.0.1:25520"}, Map.of());
    ConfigDiscovery.check(CorralServer.pekkoConfig(seeds, dir), seeds.cluster());
    CorralSettings kubernetes = CorralSettings.load(new String[] {"--repo", "up=generic:http://127.0.0.1:1/",
        "--discovery", "kubernetes-api"}, Map.of());
    ConfigDiscovery.check(CorralServer.pekkoConfig(kubernetes, dir), kubernetes.cluster());
  }
}
