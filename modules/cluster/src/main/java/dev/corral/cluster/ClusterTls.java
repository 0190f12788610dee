package dev.corral.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import com.typesafe.config.ConfigValueFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.interfaces.RSAPrivateKey;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;
import javax.net.ssl.SSLEngine;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ConnectionContext;
import org.apache.pekko.http.javadsl.HttpsConnectionContext;
import org.apache.pekko.pki.pem.DERPrivateKeyLoader;
import org.apache.pekko.pki.pem.PEMDecoder;
import org.apache.pekko.remote.artery.tcp.ssl.RotatingKeysSSLEngineProvider;

/**
 * The cluster's identity: a directory with {@code ca.crt} (the cluster's own CA), {@code tls.crt}
 * (this node's certificate, signed by that CA) and {@code tls.key} (its RSA private key), all PEM:
 * the layout cert-manager writes into a Secret, and what {@code corral tls init} writes.
 *
 * <p>Both cluster channels use it with mutual authentication: Artery runs as {@code tls-tcp}
 * with Pekko's {@link RotatingKeysSSLEngineProvider}, and the peer port ({@link PeerPort},
 * {@link HttpPeerBlobs}) takes its TLS engines from another instance of the same provider. Each
 * side presents its certificate and accepts only one the CA signed, so a process without a
 * certificate from the cluster's CA can neither join nor copy bytes. No host name is checked: a
 * certificate the nodes of a small cluster share must work for all of them. (Artery also checks
 * that both certificates have a subject name in common, true of a shared certificate and of
 * cert-manager's per-pod ones with a common DNS name.)
 *
 * <p>The provider reads the files again when its last read is {@link #RELOAD} old, so renewed
 * files are picked up by new connections within that time, without a restart.
 */
public final class ClusterTls {
  public static final String CA_FILE = "ca.crt";
  public static final String CERT_FILE = "tls.crt";
  public static final String KEY_FILE = "tls.key";
  /** How long one read of the files is used before they are read again. */
  public static final Duration RELOAD = Duration.ofMinutes(1);
  private static final String ENGINE = "pekko.remote.artery.ssl.rotating-keys-engine";

  private final Path dir;

  public ClusterTls(Path dir) {
    this.dir = dir.toAbsolutePath().normalize();
  }

  public Path dir() {
    return dir;
  }

  /**
   * Reads and checks the three files now: each readable PEM, the key an RSA key (what Pekko's
   * provider reads) matching the certificate, the certificate signed by the CA and valid today.
   * Returns the first problem in one line (never a key's contents), or empty.
   */
  public Optional<String> problem() {
    try {
      X509Certificate ca = certificate(CA_FILE);
      X509Certificate cert = certificate(CERT_FILE);
      PrivateKey key = privateKey();
      if (!(key instanceof RSAPrivateKey rsa)) {
        return Optional.of(file(KEY_FILE) + " is a " + key.getAlgorithm() + " key; the cluster transport needs an RSA key");
      }
      if (!(cert.getPublicKey() instanceof RSAPublicKey pub) || !pub.getModulus().equals(rsa.getModulus())) {
        return Optional.of(file(KEY_FILE) + " is not the key of " + file(CERT_FILE));
      }
      try {
        cert.verify(ca.getPublicKey());
      } catch (GeneralSecurityException e) {
        return Optional.of(file(CERT_FILE) + " is not signed by " + file(CA_FILE));
      }
      try {
        cert.checkValidity();
      } catch (CertificateException e) {
        return Optional.of(file(CERT_FILE) + " is not valid now (valid " + cert.getNotBefore() + " to "
            + cert.getNotAfter() + ")");
      }
      return Optional.empty();
    } catch (Unreadable e) {
      return Optional.of(e.getMessage());
    }
  }

  /** The Artery settings: TLS with client certificates from this directory. */
  public Config pekkoConfig() {
    return ConfigFactory.empty()
        .withValue("pekko.remote.artery.transport", ConfigValueFactory.fromAnyRef("tls-tcp"))
        .withValue("pekko.remote.artery.ssl.ssl-engine-provider",
            ConfigValueFactory.fromAnyRef(RotatingKeysSSLEngineProvider.class.getName()))
        .withValue(ENGINE + ".key-file", ConfigValueFactory.fromAnyRef(file(KEY_FILE).toString()))
        .withValue(ENGINE + ".cert-file", ConfigValueFactory.fromAnyRef(file(CERT_FILE).toString()))
        .withValue(ENGINE + ".ca-cert-file", ConfigValueFactory.fromAnyRef(file(CA_FILE).toString()))
        .withValue(ENGINE + ".ssl-context-cache-ttl", ConfigValueFactory.fromAnyRef(RELOAD.toSeconds() + "s"));
  }

  /**
   * The peer port's server side: each connection's engine from the current files, requiring a
   * client certificate signed by the CA. The system must run with {@link #pekkoConfig()}.
   */
  public Supplier<SSLEngine> serverEngines(ActorSystem<?> system, String host, int port) {
    RotatingKeysSSLEngineProvider engines = new RotatingKeysSSLEngineProvider(system.classicSystem());
    return () -> engines.createServerSSLEngine(host, port);
  }

  /** The peer channel's client side: presents this node's certificate, trusts only the CA. */
  public HttpsConnectionContext clientContext(ActorSystem<?> system) {
    RotatingKeysSSLEngineProvider engines = new RotatingKeysSSLEngineProvider(system.classicSystem());
    return ConnectionContext.httpsClient((host, port) -> engines.createClientSSLEngine(host, port));
  }

  /** The directory only (never the files' contents). */
  @Override
  public String toString() {
    return "ClusterTls[" + dir + "]";
  }

  private Path file(String name) {
    return dir.resolve(name);
  }

  private X509Certificate certificate(String name) throws Unreadable {
    Path f = file(name);
    try (InputStream in = Files.newInputStream(f)) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    } catch (IOException e) {
      throw Unreadable.of(f, e);
    } catch (CertificateException | ClassCastException e) {
      throw new Unreadable(f + " is not a PEM X.509 certificate");
    }
  }

  private PrivateKey privateKey() throws Unreadable {
    Path f = file(KEY_FILE);
    String pem;
    try {
      pem = Files.readString(f, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw Unreadable.of(f, e);
    }
    try {
      return DERPrivateKeyLoader.load(PEMDecoder.decode(pem));
    } catch (Exception e) { // PEMLoadingException, or a bad key inside (checked, thrown from Scala)
      throw new Unreadable(f + " is not a PEM private key (PKCS#1 or unencrypted PKCS#8)");
    }
  }

  private static final class Unreadable extends Exception {
    private static final long serialVersionUID = 1L;

    Unreadable(String message) {
      super(message, null, false, false);
    }

    static Unreadable of(Path f, IOException e) {
      String why = e instanceof NoSuchFileException ? "no such file"
          : e instanceof AccessDeniedException ? "permission denied" : e.getClass().getSimpleName();
      return new Unreadable("cannot read " + f + ": " + why);
    }
  }
}
