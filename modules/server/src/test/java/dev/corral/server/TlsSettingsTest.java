package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --tls-cert}/{@code --tls-key}/{@code --tls-http2}, {@code --upstream-proxy} and
 * {@code --upstream-no-proxy}, and a repository's {@code ca-bundle}/{@code client-cert}/
 * {@code client-key}: loaded at start-up, a file that does not load stops the start with one
 * line, a proxy URL with a password is refused without echoing it.
 */
class TlsSettingsTest {
  static final String[] REPOS = {"--repo", "npm=npm:https://127.0.0.1:1/"};

  @TempDir Path dir;
  private TestCertificates ca;
  private TestCertificates.Pair pair;

  @BeforeEach
  void certificates() {
    ca = TestCertificates.newCa(dir, "ca");
    pair = ca.leaf("node", KeyFormat.EC_SEC1);
  }

  private static String[] args(String... more) {
    List<String> all = new java.util.ArrayList<>(List.of(REPOS));
    all.addAll(List.of(more));
    return all.toArray(String[]::new);
  }

  private static SettingsException refused(String... more) {
    SettingsException e = assertThrows(SettingsException.class, () -> CorralSettings.load(args(more), Map.of()));
    assertFalse(e.getMessage().contains("\n"), e.getMessage());
    return e;
  }

  @Test
  void aGoodPairTurnsTlsOnAndHttp2IsTheDefault() {
    CorralSettings s = CorralSettings.load(args("--tls-cert", pair.cert().toString(), "--tls-key", pair.key().toString()), Map.of());
    assertEquals("CN=node", s.tls().orElseThrow().keys().certificate().getSubjectX500Principal().getName());
    assertTrue(s.tlsHttp2());
    assertFalse(CorralSettings.load(args("--tls-cert", pair.cert().toString(), "--tls-key", pair.key().toString(),
        "--tls-http2", "off"), Map.of()).tlsHttp2());
    CorralSettings env = CorralSettings.load(REPOS, Map.of("CORRAL_TLS_CERT", pair.cert().toString(),
        "CORRAL_TLS_KEY", pair.key().toString()));
    assertTrue(env.tls().isPresent());
    assertTrue(CorralSettings.load(REPOS, Map.of()).tls().isEmpty(), "plain HTTP without the files");
  }

  @Test
  void badTlsFilesStopTheStartWithOneLine() throws Exception {
    assertEquals("--tls-cert: needs --tls-key too", refused("--tls-cert", pair.cert().toString()).getMessage());
    assertEquals("--tls-key: needs --tls-cert too", refused("--tls-key", pair.key().toString()).getMessage());
    TestCertificates.Pair other = ca.leaf("other", KeyFormat.RSA_PKCS8);
    assertEquals("--tls-cert, --tls-key: " + other.key() + ": the private key does not belong to the certificate CN=node",
        refused("--tls-cert", pair.cert().toString(), "--tls-key", other.key().toString()).getMessage());
    Path missing = dir.resolve("missing.crt");
    assertEquals("--tls-cert, --tls-key: " + missing + ": cannot read (NoSuchFileException)",
        refused("--tls-cert", missing.toString(), "--tls-key", pair.key().toString()).getMessage());
    assertEquals("--tls-http2: \"maybe\" is not on or off", refused("--tls-cert", pair.cert().toString(),
        "--tls-key", pair.key().toString(), "--tls-http2", "maybe").getMessage());
  }

  @Test
  void theProxyUrlIsCheckedAndNeverEchoed() {
    CorralSettings s = CorralSettings.load(args("--upstream-proxy", "http://127.0.0.1:3128",
        "--upstream-no-proxy", "corp.example, .internal.example"), Map.of());
    assertTrue(s.upstreamProxy().orElseThrow().appliesTo("upstream.example"));
    assertFalse(s.upstreamProxy().orElseThrow().appliesTo("a.internal.example"));
    SettingsException secret = refused("--upstream-proxy", "http://user:hunter2@127.0.0.1:3128");
    assertEquals("--upstream-proxy: credentials in the proxy URL are not accepted", secret.getMessage());
    assertFalse(secret.getMessage().contains("hunter2"));
    assertTrue(refused("--upstream-proxy", "socks5://127.0.0.1:1080").getMessage()
        .startsWith("--upstream-proxy: expected http://HOST:PORT"));
    CorralSettings noProxyAlone = CorralSettings.load(args("--upstream-no-proxy", "corp.example"), Map.of());
    assertTrue(noProxyAlone.warnings().contains("--upstream-no-proxy has no effect without --upstream-proxy"),
        noProxyAlone.warnings().toString());
  }

  @Test
  void aRepositorysCaBundleAndClientCertificate() throws Exception {
    Path conf = dir.resolve("c.conf");
    Files.writeString(conf, "corral.repos.private { type = npm, url = \"https://127.0.0.1:1/\", ca-bundle = \""
        + ca.caCert() + "\", client-cert = \"" + pair.cert() + "\", client-key = \"" + pair.key() + "\" }");
    CorralSettings s = CorralSettings.load(new String[] {"--config", conf.toString()}, Map.of());
    assertTrue(s.repo("private").orElseThrow().tls().connectionContext().isPresent());
    assertTrue(s.repo("private").orElseThrow().tls().toString().contains("client-cert=" + pair.cert()));

    Files.writeString(conf, "corral.repos.private { type = npm, url = \"https://127.0.0.1:1/\", client-cert = \""
        + pair.cert() + "\" }");
    SettingsException alone = assertThrows(SettingsException.class,
        () -> CorralSettings.load(new String[] {"--config", conf.toString()}, Map.of()));
    assertTrue(alone.getMessage().contains("corral.repos.private.client-cert") && alone.getMessage().contains("needs client-key too"),
        alone.getMessage());

    Path junk = dir.resolve("junk.pem");
    Files.writeString(junk, "not a bundle");
    Files.writeString(conf, "corral.repos.private { type = npm, url = \"https://127.0.0.1:1/\", ca-bundle = \"" + junk + "\" }");
    SettingsException bad = assertThrows(SettingsException.class,
        () -> CorralSettings.load(new String[] {"--config", conf.toString()}, Map.of()));
    assertEquals("corral.repos.private: " + junk + ": no PEM certificate (-----BEGIN CERTIFICATE-----) found", bad.getMessage());
  }
}
