package dev.corral.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checks of {@link FakeKubernetesApi} that KubernetesDiscoveryIT relies on: a node that
 * asks wrongly (no or a wrong token, another namespace, a selector that matches no pod, no
 * trust in the CA) gets what a real API server would give it, never the pod list.
 */
class FakeKubernetesApiTest {
  @TempDir Path temp;
  private FakeKubernetesApi api;
  private HttpClient client;

  @BeforeEach
  void start() throws Exception {
    api = FakeKubernetesApi.start(temp.resolve("sa"), "ns1");
    api.addPod(new FakeKubernetesApi.Pod("corral-0", "127.0.0.2", Map.of("app", "corral"), "corral",
        Map.of("management", 7626)));
    api.addPod(new FakeKubernetesApi.Pod("other-0", "127.0.0.3", Map.of("app", "other"), "other",
        Map.of("management", 7626)));
    client = HttpClient.newBuilder().sslContext(trusting(api.caCertificate()))
        .connectTimeout(Duration.ofSeconds(10)).build();
  }

  @AfterEach
  void stop() {
    api.close();
  }

  @Test
  void listsThePodsMatchingTheSelectorToTheRightToken() throws Exception {
    String token = Files.readString(api.tokenFile());
    HttpResponse<String> r = get(api.podListPath(), "app=corral", "Bearer " + token);
    assertEquals(200, r.statusCode(), r.body());
    assertTrue(r.body().contains("\"podIP\":\"127.0.0.2\""), r.body());
    assertTrue(r.body().contains("{\"name\":\"management\",\"containerPort\":7626"), r.body());
    assertFalse(r.body().contains("127.0.0.3"), "a pod of other labels is not listed: " + r.body());
    assertEquals(new FakeKubernetesApi.Request(api.podListPath(), "app=corral", true, 200, 1), api.requests().get(0));
    assertEquals("ns1", Files.readString(api.namespaceFile()));
  }

  @Test
  void answersWhatARealApiServerWouldToAWrongRequest() throws Exception {
    String token = Files.readString(api.tokenFile());
    assertEquals(401, get(api.podListPath(), "app=corral", "Bearer wrong").statusCode());
    assertEquals(401, get(api.podListPath(), "app=corral", null).statusCode());
    assertEquals(404, get("/api/v1/namespaces/default/pods", "app=corral", "Bearer " + token).statusCode());
    HttpResponse<String> none = get(api.podListPath(), "app=corral-x", "Bearer " + token);
    assertEquals(200, none.statusCode());
    assertTrue(none.body().contains("\"items\":[]"), none.body());
    assertEquals(List.of(false, false, true, true), api.requests().stream().map(FakeKubernetesApi.Request::tokenOk).toList());
    assertEquals(0, api.requests().get(3).podsListed());
  }

  @Test
  void aClientThatDoesNotTrustTheCaCannotConnect() {
    HttpClient stranger = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    assertThrows(SSLHandshakeException.class, () -> stranger.send(
        HttpRequest.newBuilder(URI.create(url(api.podListPath()))).build(), HttpResponse.BodyHandlers.ofString()));
  }

  @Test
  void selectorTermsMustAllMatch() {
    Map<String, String> labels = Map.of("app", "corral", "tier", "cache");
    assertTrue(FakeKubernetesApi.matches("app=corral", labels));
    assertTrue(FakeKubernetesApi.matches("app==corral,tier=cache", labels));
    assertFalse(FakeKubernetesApi.matches("app=corral,tier=web", labels));
    assertFalse(FakeKubernetesApi.matches("app=other", labels));
    assertFalse(FakeKubernetesApi.matches("app", labels));
  }

  private HttpResponse<String> get(String path, String selector, String authorization) throws Exception {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path) + "?labelSelector="
        + URLEncoder.encode(selector, StandardCharsets.UTF_8)));
    if (authorization != null) {
      b.header("Authorization", authorization);
    }
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  private String url(String path) {
    return "https://127.0.0.1:" + api.serviceEnvironment().get("KUBERNETES_SERVICE_PORT") + path;
  }

  private static SSLContext trusting(Path pem) throws Exception {
    KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
    trust.load(null, null);
    try (InputStream in = Files.newInputStream(pem)) {
      trust.setCertificateEntry("ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
    }
    TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(null, tmf.getTrustManagers(), null);
    return tls;
  }
}
