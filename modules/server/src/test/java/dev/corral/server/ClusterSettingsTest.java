package dev.corral.server;

import dev.corral.cluster.ClusterSettings;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cluster, management and journal settings, and the Pekko configuration built from them. */
class ClusterSettingsTest {
  @TempDir Path dir;

  private static CorralSettings load(Map<String, String> env, String... args) {
    return CorralSettings.load(args, env);
  }

  private static SettingsException fails(Map<String, String> env, String... args) {
    return assertThrows(SettingsException.class, () -> CorralSettings.load(args, env));
  }

  private static SettingsException fails(String... args) {
    return fails(Map.of(), args);
  }

  private Path file(String name, String contents) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, contents);
    return file;
  }

  @Test
  void defaultsAreAOneNodeClusterOnTheLoopbackWithTheEmbeddedDatabase() {
    CorralSettings s = load(Map.of());
    ClusterSettings c = s.cluster();
    assertEquals("127.0.0.1", c.host());
    assertEquals(25520, c.port());
    assertEquals(List.of(), c.seedNodes());
    assertEquals(ClusterSettings.Discovery.NONE, c.discovery());
    assertEquals(Optional.empty(), c.nodeName());
    assertTrue(c.selfJoin());
    assertFalse(c.managementEnabled(), "management is off by default");
    assertEquals("127.0.0.1", c.managementHost());
    assertEquals(Optional.empty(), s.journal());
    assertEquals(1000, c.shards());
    assertEquals(1000, CorralServer.pekkoConfig(s, dir).getInt("pekko.cluster.sharding.number-of-shards"));
  }

  @Test
  void theShardCountIsSetByFlagEnvironmentOrFileAndBoundedNamingTheSetting() throws IOException {
    assertEquals(30, load(Map.of(), "--shards", "30").cluster().shards());
    assertEquals(500, load(Map.of("CORRAL_SHARDS", "500")).cluster().shards());
    Path conf = file("s.conf", "corral.cluster.shards = 7\n");
    CorralSettings fromFile = load(Map.of(), "--config", conf.toString());
    assertEquals(7, fromFile.cluster().shards());
    assertEquals(7, CorralServer.pekkoConfig(fromFile, dir).getInt("pekko.cluster.sharding.number-of-shards"));
    assertEquals("--shards: must be at least 1", fails("--shards", "0").getMessage());
    assertEquals("--shards: \"many\" is not a whole number", fails("--shards", "many").getMessage());
    assertEquals("--shards: must be at most 100000", fails("--shards", "100001").getMessage());
  }

  @Test
  void fanOutIsOffWithTwoUploadsAndASecondUnlessSetAndBadValuesNameTheSetting() throws IOException {
    assertEquals(dev.corral.core.fetch.FanOut.DEFAULT, load(Map.of()).cluster().fanOut());
    var set = load(Map.of("CORRAL_PEER_UPLOAD_CAP", "3"), "--peer-fanout", "on", "--peer-wait-bound", "250ms")
        .cluster().fanOut();
    assertEquals(new dev.corral.core.fetch.FanOut(true, 3, java.time.Duration.ofMillis(250)), set);
    Path conf = file("f.conf", "corral.cluster.peer-wait-bound = 0s\n");
    assertEquals(java.time.Duration.ZERO, load(Map.of(), "--config", conf.toString()).cluster().fanOut().waitBound());
    assertEquals("--peer-upload-cap: must be at least 1", fails("--peer-upload-cap", "0").getMessage());
    assertEquals("--peer-fanout: \"sometimes\" is not on or off", fails("--peer-fanout", "sometimes").getMessage());
    assertTrue(fails("--peer-wait-bound", "5").getMessage().startsWith("--peer-wait-bound: \"5\" is not a duration"));
  }

  @Test
  void flagsEnvironmentAndHoconSetTheClusterSettings() throws IOException {
    CorralSettings flags = load(Map.of(), "--cluster-host", "node-1.internal", "--cluster-insecure", "--cluster-port", "0",
        "--seed-nodes", "127.0.0.11:25520, 127.0.0.12:25521", "--node-name", "corral-1", "--management-port", "0");
    assertEquals("node-1.internal", flags.cluster().host());
    assertEquals(0, flags.cluster().port());
    assertEquals(List.of("127.0.0.11:25520", "127.0.0.12:25521"), flags.cluster().seedNodes());
    assertEquals(Optional.of("corral-1"), flags.cluster().nodeName());
    assertEquals(OptionalInt.of(0), flags.cluster().managementPort());
    assertFalse(flags.cluster().selfJoin());

    CorralSettings env = load(Map.of("CORRAL_SEED_NODES", "a:1", "CORRAL_CLUSTER_PORT", "2552",
        "CORRAL_DISCOVERY", "none", "CORRAL_MANAGEMENT_HOST", "0.0.0.0"));
    assertEquals(List.of("a:1"), env.cluster().seedNodes());
    assertEquals(2552, env.cluster().port());
    assertEquals("0.0.0.0", env.cluster().managementHost());

    Path conf = file("c.conf", "corral.cluster { seed-nodes = [\"h1:1\", \"h2:2\"], node-name = n1 }\n");
    assertEquals(List.of("h1:1", "h2:2"), load(Map.of(), "--config", conf.toString()).cluster().seedNodes());
  }

  @Test
  void discoveryTurnsManagementOnAtPekkosPort() {
    ClusterSettings c = load(Map.of(), "--discovery", "kubernetes-api").cluster();
    assertEquals(ClusterSettings.Discovery.KUBERNETES_API, c.discovery());
    assertTrue(c.managementEnabled());
    assertEquals(7626, c.effectiveManagementPort());
    assertFalse(c.selfJoin());
  }

  @Test
  void badClusterValuesNameTheSetting() {
    assertEquals("--seed-nodes: \"127.0.0.11\" is not HOST:PORT (a seed node's cluster host and port)",
        fails("--seed-nodes", "127.0.0.11").getMessage());
    assertEquals("--seed-nodes", fails("--seed-nodes", "a:1,b:0").setting());
    assertEquals("CORRAL_SEED_NODES", fails(Map.of("CORRAL_SEED_NODES", "pekko://corral@a:1")).setting());
    assertEquals("--cluster-port: \"x\" is not a port (0-65535)", fails("--cluster-port", "x").getMessage());
    assertEquals("--discovery: \"dns\" is not none, config or kubernetes-api", fails("--discovery", "dns").getMessage());
    assertEquals("--seed-nodes: set seed nodes or --discovery, not both",
        fails("--seed-nodes", "a:1", "--discovery", "config").getMessage());
    assertEquals("--node-name", fails("--node-name", "has space").setting());
    assertEquals("--management-port", fails("--management-port", "70000").setting());
    assertEquals("--cluster-host", fails("--cluster-host", "a b").setting());
  }

  @Test
  void journalFromFlagsWithThePasswordFromAFile() throws IOException {
    Path secret = file("pw", "  s3cret \n");
    CorralSettings s = load(Map.of(), "--journal", "jdbc:postgresql://127.0.0.1:5432/corral",
        "--journal-user", "corral", "--journal-password-file", secret.toString());
    JournalSettings j = s.journal().orElseThrow();
    assertEquals("jdbc:postgresql://127.0.0.1:5432/corral", j.url());
    assertEquals(Optional.of("corral"), j.user());
    assertEquals(Optional.of("s3cret"), j.password());
    assertEquals("--journal", j.label());
    assertFalse(s.toString().contains("s3cret"), s.toString());

    JournalSettings fromEnv = load(Map.of("CORRAL_JOURNAL", "jdbc:postgresql://db:5432/c?sslmode=require",
        "CORRAL_JOURNAL_PASSWORD", "pw")).journal().orElseThrow();
    assertEquals(Optional.of("pw"), fromEnv.password());
    assertEquals("CORRAL_JOURNAL", fromEnv.label());
  }

  @Test
  void badJournalValuesNameTheSetting() throws IOException {
    String url = "jdbc:postgresql://127.0.0.1:5432/corral";
    assertEquals("--journal: \"postgres://127.0.0.1/corral\" is not jdbc:postgresql://HOST:PORT/DB",
        fails("--journal", "postgres://127.0.0.1/corral").getMessage());
    Path empty = file("empty", " \n");
    SettingsException e = fails("--journal", url, "--journal-password-file", empty.toString());
    assertEquals("--journal-password-file", e.setting());
    assertTrue(e.getMessage().endsWith("is empty"), e.getMessage());
    assertEquals("--journal-password-file", fails("--journal", url, "--journal-password-file",
        dir.resolve("missing").toString()).setting());
    assertEquals("--journal-password-file", fails("--journal", url, "--journal-password", "a",
        "--journal-password-file", empty.toString()).setting());
    assertEquals("--journal-user: needs --journal (the embedded database takes no credentials)",
        fails("--journal-user", "u").getMessage());
    assertEquals("corral.journal.passwrd", fails("--config", file("j.conf",
        "corral.journal.passwrd = x").toString()).setting());
  }

  @Test
  void pekkoConfigCarriesTheClusterAndDatabaseSettings() throws IOException {
    Path secret = file("pw", "pw");
    CorralSettings s = load(Map.of(), "--cluster-host", "127.1.2.3", "--cluster-port", "25521",
        "--seed-nodes", "127.1.2.3:25521,127.1.2.4:25520", "--management-port", "7700",
        "--journal", "jdbc:postgresql://127.0.0.1:5432/corral", "--journal-user", "u",
        "--journal-password-file", secret.toString());
    Config p = CorralServer.pekkoConfig(s, dir);
    assertEquals("127.1.2.3", p.getString("pekko.remote.artery.canonical.hostname"));
    assertEquals(25521, p.getInt("pekko.remote.artery.canonical.port"));
    assertEquals(List.of("pekko://corral@127.1.2.3:25521", "pekko://corral@127.1.2.4:25520"),
        p.getStringList("pekko.cluster.seed-nodes"));
    assertEquals("127.0.0.1", p.getString("pekko.management.http.hostname"));
    assertEquals(7700, p.getInt("pekko.management.http.port"));
    assertEquals("org.apache.pekko.cluster.sbr.SplitBrainResolverProvider",
        p.getString("pekko.cluster.downing-provider-class"));
    assertEquals("keep-majority", p.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals("pekko.actor.default-dispatcher", p.getString("pekko.io.tcp.worker-dispatcher"),
        "TCP connections' actors run beside their streams (docs/operations.md, Dispatchers)");
    assertEquals("slick.jdbc.PostgresProfile$", p.getString("jdbc-durable-state-store.slick.profile"));
    assertEquals("org.postgresql.Driver", p.getString("jdbc-durable-state-store.slick.db.driver"));
    assertEquals("pw", p.getString("pekko-persistence-jdbc.shared-databases.slick.db.password"));
    assertEquals("u", p.getString("pekko-persistence-jdbc.shared-databases.slick.db.user"));

    Config oneNode = CorralServer.pekkoConfig(load(Map.of()), dir);
    assertEquals(List.of(), oneNode.getStringList("pekko.cluster.seed-nodes"));
    assertEquals("slick.jdbc.H2Profile$", oneNode.getString("jdbc-durable-state-store.slick.profile"));

    Config k8s = CorralServer.pekkoConfig(load(Map.of(), "--discovery", "kubernetes-api",
        "--management-host", "127.0.0.19"), dir);
    assertEquals("kubernetes-api",
        k8s.getString("pekko.management.cluster.bootstrap.contact-point-discovery.discovery-method"));
    assertEquals("corral", k8s.getString("pekko.management.cluster.bootstrap.contact-point-discovery.service-name"));
    assertEquals("127.0.0.19", k8s.getString("pekko.management.http.hostname"));
    assertEquals(7626, k8s.getInt("pekko.management.http.port"));
  }

  // ---- the cluster's identity (issue 12, item 1)

  @Test
  void aNonLoopbackClusterHostIsRefusedBeforeAnythingBindsUnlessTlsOrInsecure() throws Exception {
    SettingsException e = fails("--cluster-host", "192.0.2.10");
    assertEquals("--cluster-host", e.setting());
    assertFalse(e.getMessage().contains("\n"), "one line");
    assertTrue(e.getMessage().contains("--cluster-tls-dir") && e.getMessage().contains("--cluster-insecure"),
        e.getMessage());
    assertEquals("CORRAL_CLUSTER_HOST", fails(Map.of("CORRAL_CLUSTER_HOST", "0.0.0.0")).setting());

    assertTrue(load(Map.of(), "--cluster-host", "192.0.2.10", "--cluster-insecure").cluster().insecure());
    assertTrue(load(Map.of("CORRAL_CLUSTER_INSECURE", "true", "CORRAL_CLUSTER_HOST", "192.0.2.10")).cluster().insecure());
    assertEquals("--cluster-insecure: \"maybe\" is not true or false",
        fails("--cluster-insecure=maybe").getMessage());
    Path tls = dir.resolve("tls");
    ClusterCertificates.write(tls, List.of(), false);
    ClusterSettings c = load(Map.of(), "--cluster-host", "192.0.2.10", "--cluster-tls-dir", tls.toString()).cluster();
    assertEquals(tls.toAbsolutePath(), c.tls().orElseThrow().dir());
    assertFalse(c.insecure());
  }

  @Test
  void theTlsDirIsCheckedAtStartAndTheDefaultsAreAPlainLoopbackWithPeerPort7627() throws Exception {
    ClusterSettings defaults = load(Map.of()).cluster();
    assertEquals(Optional.empty(), defaults.tls());
    assertFalse(defaults.insecure());
    assertEquals(7627, defaults.peerPort());
    assertEquals(0, load(Map.of(), "--peer-port", "0").cluster().peerPort());
    assertEquals("--peer-port", fails("--peer-port", "99999").setting());

    SettingsException missing = fails("--cluster-tls-dir", dir.resolve("none").toString());
    assertEquals("--cluster-tls-dir: cannot read " + dir.resolve("none").resolve("ca.crt").toAbsolutePath()
        + ": no such file", missing.getMessage());
  }

  @Test
  void pekkoConfigRunsArteryOverTlsWithTheRotatingKeysProvider() throws Exception {
    Path tls = dir.resolve("tls");
    ClusterCertificates.write(tls, List.of(), false);
    Config p = CorralServer.pekkoConfig(load(Map.of(), "--cluster-tls-dir", tls.toString()), dir);
    assertEquals("tls-tcp", p.getString("pekko.remote.artery.transport"));
    assertEquals("org.apache.pekko.remote.artery.tcp.ssl.RotatingKeysSSLEngineProvider",
        p.getString("pekko.remote.artery.ssl.ssl-engine-provider"));
    assertEquals(tls.toAbsolutePath().resolve("tls.key").toString(),
        p.getString("pekko.remote.artery.ssl.rotating-keys-engine.key-file"));
    assertEquals(tls.toAbsolutePath().resolve("ca.crt").toString(),
        p.getString("pekko.remote.artery.ssl.rotating-keys-engine.ca-cert-file"));
    assertEquals(java.time.Duration.ofMinutes(1),
        p.getDuration("pekko.remote.artery.ssl.rotating-keys-engine.ssl-context-cache-ttl"));
    assertEquals("tcp", CorralServer.pekkoConfig(load(Map.of()), dir).getString("pekko.remote.artery.transport"));
  }
}
