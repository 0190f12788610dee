package dev.corral.http.tls;

import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import java.util.function.LongSupplier;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A key manager over a PEM certificate chain and its private key that picks up renewed files
 * (cert-manager, ACME) without a restart: at most once per {@code checkEvery}, on a handshake,
 * it compares the two files' modified times and, if either changed, reads the pair again. A new
 * pair that does not load, or whose key does not match its certificate, is logged once and the
 * previous pair stays in use; connections already open keep the certificate they began with.
 *
 * <p>Each loaded pair has its own alias, so a handshake that chose a pair gets that pair's chain
 * and key even if a reload happens half-way through it.
 */
public final class ReloadingKeyManager extends X509ExtendedKeyManager {
  private static final Logger log = LoggerFactory.getLogger(ReloadingKeyManager.class);

  private final Path certFile;
  private final Path keyFile;
  private final long checkEveryNanos;
  private final LongSupplier nanoTime;
  private volatile Pair current;
  private volatile Pair previous;
  private volatile long nextCheck;
  /** The modified times of the last pair that failed, so that it is reported once. */
  private volatile Stamp failed;

  private record Stamp(FileTime cert, FileTime key) {}

  private record Pair(String alias, Stamp stamp, X509Certificate[] chain, PrivateKey key) {}

  /**
   * Loads the pair now.
   *
   * @throws Pem.PemException when the files do not load or do not belong together: the node
   *     should refuse to start
   */
  public ReloadingKeyManager(Path certFile, Path keyFile, java.time.Duration checkEvery) throws Pem.PemException {
    this(certFile, keyFile, checkEvery, System::nanoTime);
  }

  ReloadingKeyManager(Path certFile, Path keyFile, java.time.Duration checkEvery, LongSupplier nanoTime)
      throws Pem.PemException {
    this.certFile = Objects.requireNonNull(certFile, "certFile");
    this.keyFile = Objects.requireNonNull(keyFile, "keyFile");
    this.checkEveryNanos = checkEvery.toNanos();
    this.nanoTime = nanoTime;
    this.current = load(0);
    this.nextCheck = nanoTime.getAsLong() + checkEveryNanos;
  }

  /** The certificate served to new connections now (the chain's first). */
  public X509Certificate certificate() {
    return current.chain[0];
  }

  /** Reads the files again if they changed since the last look (and the last look is old enough). */
  void maybeReload() {
    long now = nanoTime.getAsLong();
    if (now - nextCheck < 0) {
      return;
    }
    synchronized (this) {
      if (now - nextCheck < 0) {
        return;
      }
      nextCheck = now + checkEveryNanos;
      Stamp stamp;
      try {
        stamp = stamp();
      } catch (IOException e) {
        report(null, certFile + " or " + keyFile + ": cannot read (" + e.getClass().getSimpleName() + ")");
        return;
      }
      if (stamp.equals(current.stamp) || stamp.equals(failed)) {
        return;
      }
      Pair old = current;
      try {
        current = load(Integer.parseInt(old.alias.substring(old.alias.lastIndexOf('-') + 1)) + 1);
        previous = old;
        failed = null;
        log.info("TLS certificate reloaded from {}: {}, valid until {}", certFile,
            current.chain[0].getSubjectX500Principal().getName(), current.chain[0].getNotAfter().toInstant());
      } catch (Pem.PemException e) {
        report(stamp, e.getMessage());
      }
    }
  }

  private void report(Stamp stamp, String why) {
    failed = stamp;
    log.error("TLS certificate not reloaded, the previous one stays in use: {}", why);
  }

  private Stamp stamp() throws IOException {
    return new Stamp(Files.getLastModifiedTime(certFile), Files.getLastModifiedTime(keyFile));
  }

  private Pair load(int generation) throws Pem.PemException {
    Stamp stamp = new Stamp(modified(certFile), modified(keyFile));
    List<X509Certificate> chain = Pem.certificates(certFile);
    PrivateKey key = Pem.privateKey(keyFile);
    KeyMatch.check(chain.get(0), key, keyFile);
    return new Pair("corral-" + generation, stamp, chain.toArray(new X509Certificate[0]), key);
  }

  private static FileTime modified(Path file) throws Pem.PemException {
    try {
      return Files.getLastModifiedTime(file);
    } catch (IOException e) {
      throw new Pem.PemException(file, "cannot read (" + e.getClass().getSimpleName() + ")");
    }
  }

  private Pair pair(String alias) {
    Pair c = current;
    if (c.alias.equals(alias)) {
      return c;
    }
    Pair p = previous;
    return p != null && p.alias.equals(alias) ? p : null;
  }

  @Override
  public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine engine) {
    return chooseServerAlias(keyType, issuers, null);
  }

  @Override
  public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
    maybeReload();
    Pair c = current;
    return keyType == null || keyType.equalsIgnoreCase(c.key.getAlgorithm()) ? c.alias : null;
  }

  @Override
  public String[] getServerAliases(String keyType, Principal[] issuers) {
    Pair c = current;
    return keyType == null || keyType.equalsIgnoreCase(c.key.getAlgorithm()) ? new String[] {c.alias} : null;
  }

  @Override
  public X509Certificate[] getCertificateChain(String alias) {
    Pair p = pair(alias);
    return p == null ? null : p.chain.clone();
  }

  @Override
  public PrivateKey getPrivateKey(String alias) {
    Pair p = pair(alias);
    return p == null ? null : p.key;
  }

  // A server key manager: it never presents a client certificate.

  @Override
  public String[] getClientAliases(String keyType, Principal[] issuers) {
    return null;
  }

  @Override
  public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
    return null;
  }

  @Override
  public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
    return null;
  }
}
