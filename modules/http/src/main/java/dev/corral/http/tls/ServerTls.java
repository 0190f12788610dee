package dev.corral.http.tls;

import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import javax.net.ssl.KeyManager;
import javax.net.ssl.SSLContext;

/**
 * The client port's TLS: the certificate and key from {@code --tls-cert} and {@code --tls-key}
 * (PEM), re-read when they change ({@link ReloadingKeyManager}), protocols and cipher suites as
 * the JDK enables them (TLS 1.2 and 1.3).
 */
public final class ServerTls {
  /** How often a handshake may look at the files' modified times. */
  public static final Duration CHECK_EVERY = Duration.ofSeconds(2);

  private final ReloadingKeyManager keys;
  private final SSLContext context;

  private ServerTls(ReloadingKeyManager keys, SSLContext context) {
    this.keys = keys;
    this.context = context;
  }

  /**
   * Loads the pair now.
   *
   * @throws Pem.PemException when the files cannot be used; its message is the one line to show
   */
  public static ServerTls load(Path certFile, Path keyFile, Duration checkEvery) throws Pem.PemException {
    ReloadingKeyManager keys = new ReloadingKeyManager(certFile, keyFile, checkEvery);
    try {
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(new KeyManager[] {keys}, null, null);
      return new ServerTls(keys, context);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK offers no TLS", e);
    }
  }

  public SSLContext sslContext() {
    return context;
  }

  public ReloadingKeyManager keys() {
    return keys;
  }
}
