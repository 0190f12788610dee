package dev.corral.testkit.upstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * Certificates made for a test by the {@code openssl} command (never checked in): a CA, and
 * leaves it signs for 127.0.0.1 and localhost, as PEM files in a test's directory.
 */
public final class TestCertificates {
  /** How a leaf's private key is written. */
  public enum KeyFormat {
    /** RSA in PKCS#8 ({@code BEGIN PRIVATE KEY}). */
    RSA_PKCS8,
    /** RSA in PKCS#1 ({@code BEGIN RSA PRIVATE KEY}). */
    RSA_PKCS1,
    /** EC P-256 in SEC1 ({@code BEGIN EC PRIVATE KEY}). */
    EC_SEC1,
    /** EC P-256 in PKCS#8. */
    EC_PKCS8
  }

  /** A certificate and its key as PEM files. */
  public record Pair(Path cert, Path key) {}

  private final Path dir;
  private final Pair ca;

  private TestCertificates(Path dir, Pair ca) {
    this.dir = dir;
    this.ca = ca;
  }

  /** A new CA (its own certificate and key) under {@code dir}. */
  public static TestCertificates newCa(Path dir, String name) {
    try {
      Files.createDirectories(dir);
      Pair ca = new Pair(dir.resolve(name + "-ca.crt"), dir.resolve(name + "-ca.key"));
      openssl(dir, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name + " test CA",
          "-keyout", ca.key.toString(), "-out", ca.cert.toString(),
          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
      return new TestCertificates(dir, ca);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  public Path caCert() {
    return ca.cert;
  }

  /** A leaf for 127.0.0.1 and localhost, signed by this CA, its key as {@code format}. */
  public Pair leaf(String name, KeyFormat format) {
    return leaf(name, format, dir.resolve(name + ".crt"), dir.resolve(name + ".key"));
  }

  /** The same, written to the given files (replacing them, for reload tests). */
  public Pair leaf(String name, KeyFormat format, Path certOut, Path keyOut) {
    return leaf(name, format, certOut, keyOut, "IP:127.0.0.1,DNS:localhost");
  }

  /** A leaf for other names ({@code subjectAltName}, e.g. {@code DNS:elsewhere.example}). */
  public Pair leaf(String name, KeyFormat format, String subjectAltNames) {
    return leaf(name, format, dir.resolve(name + ".crt"), dir.resolve(name + ".key"), subjectAltNames);
  }

  private Pair leaf(String name, KeyFormat format, Path certOut, Path keyOut, String subjectAltNames) {
    try {
      Path raw = dir.resolve(name + ".raw.key");
      Path csr = dir.resolve(name + ".csr");
      Path ext = dir.resolve(name + ".ext");
      Path certTmp = dir.resolve(name + ".crt.tmp");
      Path keyTmp = dir.resolve(name + ".key.tmp");
      boolean ec = format == KeyFormat.EC_SEC1 || format == KeyFormat.EC_PKCS8;
      if (ec) {
        openssl(dir, "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", raw.toString());
      } else {
        openssl(dir, "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", raw.toString());
      }
      switch (format) {
        case RSA_PKCS1 -> openssl(dir, "rsa", "-in", raw.toString(), "-traditional", "-out", keyTmp.toString());
        case EC_SEC1 -> openssl(dir, "ec", "-in", raw.toString(), "-out", keyTmp.toString());
        default -> Files.copy(raw, keyTmp, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
      openssl(dir, "req", "-new", "-key", raw.toString(), "-subj", "/CN=" + name, "-out", csr.toString());
      Files.writeString(ext, "subjectAltName=" + subjectAltNames + "\nbasicConstraints=CA:FALSE\n"
          + "extendedKeyUsage=serverAuth,clientAuth\n");
      openssl(dir, "x509", "-req", "-in", csr.toString(), "-CA", ca.cert.toString(), "-CAkey", ca.key.toString(),
          "-CAcreateserial", "-days", "2", "-extfile", ext.toString(), "-out", certTmp.toString());
      // Both files appear whole (renamed into place), as cert-manager's atomic writer does.
      Files.move(keyTmp, keyOut, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      Files.move(certTmp, certOut, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
      Files.deleteIfExists(raw);
      Files.deleteIfExists(csr);
      return new Pair(certOut, keyOut);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * An SSLContext for the JDK's own servers and clients: {@code own} as its key (may be null),
   * trusting {@code trusted}'s CA (may be null: the JDK's CAs).
   */
  public static SSLContext context(Pair own, TestCertificates trusted) {
    try {
      KeyManagerFactory kmf = null;
      if (own != null) {
        Path p12 = own.cert.resolveSibling(own.cert.getFileName() + ".p12");
        openssl(own.cert.getParent(), "pkcs12", "-export", "-in", own.cert.toString(), "-inkey", own.key.toString(),
            "-out", p12.toString(), "-passout", "pass:test");
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(p12)) {
          ks.load(in, "test".toCharArray());
        }
        kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, "test".toCharArray());
      }
      TrustManagerFactory tmf = null;
      if (trusted != null) {
        KeyStore ts = KeyStore.getInstance("PKCS12");
        ts.load(null, null);
        try (InputStream in = Files.newInputStream(trusted.caCert())) {
          ts.setCertificateEntry("ca", java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ts);
      }
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf == null ? null : kmf.getKeyManagers(), tmf == null ? null : tmf.getTrustManagers(), null);
      return context;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (java.security.GeneralSecurityException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void openssl(Path dir, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add("openssl");
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    try {
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IOException("openssl did not finish: " + command);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new IOException("openssl failed: " + command + "\n" + out);
    }
  }
}
