package dev.corral.http.tls;

import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Optional;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;

/**
 * How one repository's upstream connections do TLS: which certificate authorities they trust
 * ({@code ca-bundle}: the bundle's CAs <em>instead of</em> the JDK's, so a private upstream is
 * pinned to its own CA) and which client certificate they present when the upstream asks for one
 * ({@code client-cert} and {@code client-key}). The host name is always verified against the
 * upstream's certificate. The files are read once, at start-up.
 */
public final class UpstreamTls {
  /** The JDK's trusted CAs, no client certificate. */
  public static final UpstreamTls JDK_DEFAULTS = new UpstreamTls(Optional.empty(), Optional.empty(), null);

  private final Optional<Path> caBundle;
  private final Optional<Path> clientCert;
  private final SSLContext context;

  private UpstreamTls(Optional<Path> caBundle, Optional<Path> clientCert, SSLContext context) {
    this.caBundle = caBundle;
    this.clientCert = clientCert;
    this.context = context;
  }

  /**
   * Reads the files now.
   *
   * @param clientKey required exactly when {@code clientCert} is given (the caller checks that)
   * @throws Pem.PemException when a file cannot be used; its message is the one line to show
   */
  public static UpstreamTls load(Optional<Path> caBundle, Optional<Path> clientCert, Optional<Path> clientKey)
      throws Pem.PemException {
    if (caBundle.isEmpty() && clientCert.isEmpty()) {
      return JDK_DEFAULTS;
    }
    if (clientCert.isPresent() != clientKey.isPresent()) {
      throw new IllegalArgumentException("client-cert and client-key go together");
    }
    try {
      TrustManager[] trust = null; // the JDK's
      if (caBundle.isPresent()) {
        KeyStore store = emptyStore();
        int i = 0;
        for (X509Certificate ca : Pem.certificates(caBundle.get())) {
          store.setCertificateEntry("ca-" + i++, ca);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(store);
        trust = tmf.getTrustManagers();
      }
      KeyManager[] keys = null;
      if (clientCert.isPresent()) {
        List<X509Certificate> chain = Pem.certificates(clientCert.get());
        PrivateKey key = Pem.privateKey(clientKey.get());
        KeyMatch.check(chain.get(0), key, clientKey.get());
        KeyStore store = emptyStore();
        store.setKeyEntry("client", key, new char[0], chain.toArray(new X509Certificate[0]));
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(store, new char[0]);
        keys = kmf.getKeyManagers();
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keys, trust, null);
      return new UpstreamTls(caBundle, clientCert, context);
    } catch (GeneralSecurityException | java.io.IOException e) {
      throw new IllegalStateException("the JDK could not build a TLS context", e);
    }
  }

  private static KeyStore emptyStore() throws GeneralSecurityException, java.io.IOException {
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, null);
    return store;
  }

  /** Empty for the JDK's defaults: the caller keeps Pekko's default client context. */
  public Optional<HttpsConnectionContext> connectionContext() {
    if (context == null) {
      return Optional.empty();
    }
    return Optional.of(ConnectionContext.httpsClient((host, port) -> {
      SSLEngine engine = context.createSSLEngine(host, port);
      engine.setUseClientMode(true);
      SSLParameters params = engine.getSSLParameters();
      params.setEndpointIdentificationAlgorithm("HTTPS");
      engine.setSSLParameters(params);
      return engine;
    }));
  }

  @Override
  public String toString() {
    return "UpstreamTls[ca-bundle=" + caBundle.map(Path::toString).orElse("JDK")
        + ", client-cert=" + clientCert.map(Path::toString).orElse("none") + "]";
  }
}
