package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.Config;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code --config} file's {@code pekko} section beside Corral's settings: it may tune Pekko, but
 * not contradict what Corral makes from its own settings, and it cannot open the cluster port to
 * other machines past the check that such a port has the cluster's TLS or {@code --cluster-insecure}
 * (which the file's {@code bind.hostname} or {@code transport} did: the node started with a plain
 * cluster port on every interface).
 */
class OwnedPekkoSettingsTest {
  @TempDir Path dir;

  private Config pekkoConfig(String file, String... args) throws IOException {
    Path conf = dir.resolve("corral.conf");
    Files.writeString(conf, file);
    String[] all = new String[args.length + 2];
    all[0] = "--config";
    all[1] = conf.toString();
    System.arraycopy(args, 0, all, 2, args.length);
    return CorralServer.pekkoConfig(CorralSettings.load(all, Map.of()), dir);
  }

  private String refused(String file, String... args) {
    return assertThrows(SettingsException.class, () -> pekkoConfig(file, args)).getMessage();
  }

  @Test
  void aBindAddressBeyondLoopbackInTheFileIsRefusedWithoutTlsOrInsecure() throws Exception {
    assertEquals("--config: pekko.remote.artery.bind.hostname = 0.0.0.0 is not a loopback address: anyone who"
            + " reaches the cluster port could join the cluster; give --cluster-tls-dir DIR (see corral tls init)"
            + " or --cluster-insecure",
        refused("pekko.remote.artery.bind.hostname = \"0.0.0.0\"\n"));
    assertEquals("0.0.0.0", pekkoConfig("pekko.remote.artery.bind.hostname = \"0.0.0.0\"\n", "--cluster-insecure")
        .getString("pekko.remote.artery.bind.hostname"), "the operator's explicit choice");
    assertEquals("127.0.0.2", pekkoConfig("pekko.remote.artery.bind.hostname = \"127.0.0.2\"\n")
        .getString("pekko.remote.artery.bind.hostname"));
  }

  @Test
  void aBindAddressBeyondLoopbackIsTheOperatorsWithTheClustersTls() throws Exception {
    Path tls = dir.resolve("tls");
    ClusterCertificates.write(tls, List.of(), false);
    Config c = pekkoConfig("pekko.remote.artery.bind.hostname = \"0.0.0.0\"\n", "--cluster-tls-dir", tls.toString());
    assertEquals("tls-tcp", c.getString("pekko.remote.artery.transport"));
  }

  @Test
  void theClustersTlsCannotBeTurnedOffByTheFile() throws Exception {
    Path tls = dir.resolve("tls");
    ClusterCertificates.write(tls, List.of(), false);
    assertEquals("--config: pekko.remote.artery.transport = \"tcp\" contradicts --cluster-tls-dir (\"tls-tcp\"):"
            + " set --cluster-tls-dir instead, and leave pekko.remote.artery.transport out of the file",
        refused("pekko.remote.artery.transport = tcp\n", "--cluster-tls-dir", tls.toString()));
    String engine = refused("pekko.remote.artery.ssl.ssl-engine-provider = \"some.OtherProvider\"\n",
        "--cluster-tls-dir", tls.toString());
    assertEquals("--config: pekko.remote.artery.ssl.ssl-engine-provider = \"some.OtherProvider\" contradicts",
        engine.substring(0, engine.indexOf(" contradicts") + " contradicts".length()));
  }

  @Test
  void valuesCorralMakesFromItsSettingsAreRefusedWhenTheFileSaysOtherwiseNamingTheSetting() {
    assertEquals("--config: pekko.remote.artery.canonical.hostname = \"0.0.0.0\" contradicts --cluster-host"
            + " (\"127.0.0.1\"): set --cluster-host instead, and leave pekko.remote.artery.canonical.hostname out of"
            + " the file",
        refused("pekko.remote.artery.canonical.hostname = \"0.0.0.0\"\n"));
    assertEquals("--idle-timeout", settingNamed(refused("pekko.http.server.idle-timeout = 10 days\n")));
    assertEquals("--shards", settingNamed(refused("pekko.cluster.sharding.number-of-shards = 7\n")));
    assertEquals("--seed-nodes", settingNamed(refused("pekko.cluster.seed-nodes = [\"pekko://corral@127.0.0.1:1\"]\n")));
    assertEquals("--drain-timeout",
        settingNamed(refused("pekko.coordinated-shutdown.phases.service-requests-done.timeout = 1 s\n")));
  }

  @Test
  void theSameValueWrittenAnotherWayAndPekkoSettingsCorralDoesNotMakePass() throws Exception {
    Config c = pekkoConfig("pekko.http.server.idle-timeout = 90 s\n"
        + "pekko.cluster.sharding.number-of-shards = 30\n"
        + "pekko.cluster.seed-node-timeout = 1 s\n"
        + "pekko.coordinated-shutdown.phases.before-actor-system-terminate.timeout = 120 s\n",
        "--idle-timeout", "90000ms", "--shards", "30", "--seed-nodes", "127.0.0.1:25521");
    assertEquals(90, c.getDuration("pekko.http.server.idle-timeout").toSeconds());
    assertEquals(1, c.getDuration("pekko.cluster.seed-node-timeout").toSeconds());
    assertEquals(120, c.getDuration("pekko.coordinated-shutdown.phases.before-actor-system-terminate.timeout")
        .toSeconds(), "a Pekko setting Corral gives a default, not one of its own settings");
    assertEquals(List.of("pekko://corral@127.0.0.1:25521"), c.getStringList("pekko.cluster.seed-nodes"));
  }

  private static String settingNamed(String message) {
    String after = message.substring(message.indexOf(" contradicts ") + " contradicts ".length());
    return after.substring(0, after.indexOf(' '));
  }
}
