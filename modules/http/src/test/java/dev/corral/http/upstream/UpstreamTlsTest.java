package dev.corral.http.upstream;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import dev.corral.http.metrics.Metrics;
import dev.corral.http.tls.UpstreamTls;
import dev.corral.testkit.upstream.CountingProxy;
import dev.corral.testkit.upstream.FakeUpstream;
import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import dev.corral.testkit.upstream.TlsUpstream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Upstream TLS per repository (a private CA's bundle, a client certificate) and the egress
 * proxy, against HTTPS upstreams and a CONNECT proxy on 127.0.0.1 (docs/security.md, "TLS").
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class UpstreamTlsTest {
  private static final String REPO = "repo";
  private static final byte[] BODY = "artifact".getBytes(StandardCharsets.UTF_8);

  private final ActorTestKit testKit = ActorTestKit.create("UpstreamTlsTest");
  private final ActorSystem<Void> system = testKit.system();
  private Path dir;
  private TestCertificates upstreamCa;
  private TestCertificates clientCa;
  private TestCertificates.Pair server;
  private TestCertificates.Pair client;

  @BeforeAll
  void certificates(@TempDir Path dir) {
    this.dir = dir;
    upstreamCa = TestCertificates.newCa(dir.resolve("upstream"), "upstream");
    server = upstreamCa.leaf("server", KeyFormat.RSA_PKCS8);
    clientCa = TestCertificates.newCa(dir.resolve("client"), "client");
    client = clientCa.leaf("corral-client", KeyFormat.EC_SEC1);
  }

  @AfterAll
  void stop() {
    testKit.shutdownTestKit();
  }

  private HttpUpstream upstream(String baseUrl, UpstreamTls tls, Optional<EgressProxy> proxy) {
    return new HttpUpstream(system, new Metrics(),
        Map.of(REPO, new RepoUpstream(baseUrl, UpstreamSettings.DEFAULTS.withRetries(0, java.time.Duration.ZERO), tls)), proxy);
  }

  private byte[] fetch(HttpUpstream upstream, String url) throws Exception {
    UpstreamResponse r = upstream.get(UpstreamRequest.get(REPO, url)).toCompletableFuture().get(20, SECONDS);
    return r.body().runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), system)
        .toCompletableFuture().get(20, SECONDS).toArray();
  }

  private UpstreamException failure(HttpUpstream upstream, String url) {
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> upstream.get(UpstreamRequest.get(REPO, url)).toCompletableFuture().get(20, SECONDS));
    return assertInstanceOf(UpstreamException.class, e.getCause());
  }

  @Test
  void aPrivateCaIsRefusedWithoutItsBundleAndServedWithIt() throws Exception {
    try (TlsUpstream https = new TlsUpstream(TestCertificates.context(server, null), false, BODY)) {
      failure(upstream(https.url(), UpstreamTls.JDK_DEFAULTS, Optional.empty()), https.url() + "/a");
      assertEquals(List.of(), https.served, "no request got through a handshake the JDK's CAs refuse");

      UpstreamTls bundle = UpstreamTls.load(Optional.of(upstreamCa.caCert()), Optional.empty(), Optional.empty());
      assertArrayEquals(BODY, fetch(upstream(https.url(), bundle, Optional.empty()), https.url() + "/a"));
      assertEquals(List.of("/a"), https.served);
    }
  }

  @Test
  void aBundleOfAnotherCaIsRefused() throws Exception {
    // A bundle of another CA: the upstream's certificate no longer chains to anything trusted.
    try (TlsUpstream https = new TlsUpstream(TestCertificates.context(server, null), false, BODY)) {
      UpstreamTls other = UpstreamTls.load(Optional.of(clientCa.caCert()), Optional.empty(), Optional.empty());
      failure(upstream(https.url(), other, Optional.empty()), https.url() + "/a");
      assertEquals(List.of(), https.served);
    }
  }

  @Test
  void aCertificateForAnotherNameIsRefusedEvenFromTheTrustedCa() throws Exception {
    TestCertificates.Pair elsewhere = upstreamCa.leaf("elsewhere", KeyFormat.RSA_PKCS8, "DNS:elsewhere.example");
    try (TlsUpstream https = new TlsUpstream(TestCertificates.context(elsewhere, null), false, BODY)) {
      UpstreamTls bundle = UpstreamTls.load(Optional.of(upstreamCa.caCert()), Optional.empty(), Optional.empty());
      failure(upstream(https.url(), bundle, Optional.empty()), https.url() + "/a");
      assertEquals(List.of(), https.served);
    }
  }

  @Test
  void anUpstreamThatRequiresAClientCertificateGetsTheRepositorysOne() throws Exception {
    try (TlsUpstream https = new TlsUpstream(TestCertificates.context(server, clientCa), true, BODY)) {
      UpstreamTls caOnly = UpstreamTls.load(Optional.of(upstreamCa.caCert()), Optional.empty(), Optional.empty());
      failure(upstream(https.url(), caOnly, Optional.empty()), https.url() + "/a");
      assertEquals(List.of(), https.served);

      UpstreamTls withCert = UpstreamTls.load(Optional.of(upstreamCa.caCert()), Optional.of(client.cert()),
          Optional.of(client.key()));
      assertArrayEquals(BODY, fetch(upstream(https.url(), withCert, Optional.empty()), https.url() + "/a"));
      assertEquals(List.of("CN=corral-client"), https.clientSubjects);
    }
  }

  @Test
  void everyUpstreamRequestGoesThroughTheProxy() throws Exception {
    UpstreamTls bundle = UpstreamTls.load(Optional.of(upstreamCa.caCert()), Optional.empty(), Optional.empty());
    try (CountingProxy proxy = new CountingProxy();
        TlsUpstream https = new TlsUpstream(TestCertificates.context(server, null), false, BODY);
        FakeUpstream plain = new FakeUpstream((ex, n) -> FakeUpstream.send(ex, 200, BODY))) {
      Optional<EgressProxy> egress = Optional.of(EgressProxy.parse(proxy.url(), List.of()));
      assertArrayEquals(BODY, fetch(upstream(https.url(), bundle, egress), https.url() + "/tls"));
      String plainUrl = plain.url("");
      assertArrayEquals(BODY, fetch(upstream(plainUrl, UpstreamTls.JDK_DEFAULTS, egress), plainUrl + "/plain"));
      assertEquals(List.of("127.0.0.1:" + https.port(), plainUrl.substring("http://".length())), proxy.tunnels);
      assertEquals(List.of(), proxy.refused);
    }
  }

  @Test
  void noProxyHostsAreReachedDirectly() throws Exception {
    try (CountingProxy proxy = new CountingProxy();
        FakeUpstream plain = new FakeUpstream((ex, n) -> FakeUpstream.send(ex, 200, BODY))) {
      Optional<EgressProxy> egress = Optional.of(EgressProxy.parse(proxy.url(), List.of("127.0.0.1")));
      String plainUrl = plain.url("");
      assertArrayEquals(BODY, fetch(upstream(plainUrl, UpstreamTls.JDK_DEFAULTS, egress), plainUrl + "/direct"));
      assertEquals(List.of(), proxy.tunnels);
      assertEquals(1, plain.seen.size());
    }
  }

  @Test
  void proxyUrlsAreCheckedAndNoProxyMatchesSubdomains() {
    assertEquals("credentials in the proxy URL are not accepted",
        assertThrows(IllegalArgumentException.class, () -> EgressProxy.parse("http://u:secret@127.0.0.1:3128", List.of()))
            .getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> EgressProxy.parse("https://127.0.0.1:3128", List.of()))
        .getMessage().startsWith("expected http://HOST:PORT"));
    assertThrows(IllegalArgumentException.class, () -> EgressProxy.parse("http://127.0.0.1", List.of()));
    EgressProxy p = EgressProxy.parse("http://127.0.0.1:3128", List.of(".corp.example", "localhost"));
    assertTrue(!p.appliesTo("corp.example") && !p.appliesTo("a.b.CORP.example") && !p.appliesTo("localhost"));
    assertTrue(p.appliesTo("upstream.example") && p.appliesTo("notcorp.example"));
    assertTrue(!EgressProxy.parse("http://127.0.0.1:3128", List.of("*")).appliesTo("upstream.example"));
  }
}
