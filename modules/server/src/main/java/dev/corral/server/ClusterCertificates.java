package dev.corral.server;

import dev.corral.cluster.ClusterTls;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Date;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * {@code corral tls init DIR}: a fresh cluster identity in the layout {@code --cluster-tls-dir}
 * reads. A new CA ({@code ca.crt}, its key is discarded once it has signed) and one node
 * certificate ({@code tls.crt}, {@code tls.key}: RSA 2048, for server and client use) that every
 * node of a small cluster shares. The nodes check only that a certificate comes from the CA, so
 * the names in it are for the record and for tools that check them: localhost, 127.0.0.1 and ::1,
 * and each {@code --name} (a DNS name or an IP address).
 *
 * <p>The key is written 0600, the directory (when made here) 0700. Existing files are kept unless
 * {@code force}: replacing the CA cuts a running cluster in two until every node has the new files.
 */
final class ClusterCertificates {
  static final Duration CA_VALIDITY = Duration.ofDays(3650);
  static final Duration NODE_VALIDITY = Duration.ofDays(825);
  private static final Pattern DNS_NAME =
      Pattern.compile("(\\*\\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*");
  private static final Pattern IP_LITERAL = Pattern.compile("[0-9.]+|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

  private ClusterCertificates() {}

  /** A name given with {@code --name} that is neither a DNS name nor an IP address. */
  static final class BadName extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    BadName(String message) {
      super(message);
    }
  }

  /** The names the node certificate carries: the loopback ones, then {@code names} in order. */
  static List<String> subjectNames(List<String> names) {
    Set<String> all = new LinkedHashSet<>(List.of("localhost", "127.0.0.1", "::1"));
    for (String n : names) {
      if (!IP_LITERAL.matcher(n).matches() && !DNS_NAME.matcher(n).matches()) {
        throw new BadName(SettingValues.quoted(n) + " is not a DNS name or an IP address");
      }
      all.add(n);
    }
    return List.copyOf(all);
  }

  /**
   * Writes {@code ca.crt}, {@code tls.crt} and {@code tls.key} into {@code dir} (made if missing).
   *
   * @throws FileAlreadyExistsException when one exists and {@code force} is false (nothing written)
   */
  static List<Path> write(Path dir, List<String> names, boolean force) throws IOException, GeneralSecurityException {
    List<String> san = subjectNames(names);
    Path ca = dir.resolve(ClusterTls.CA_FILE);
    Path cert = dir.resolve(ClusterTls.CERT_FILE);
    Path key = dir.resolve(ClusterTls.KEY_FILE);
    if (!force) {
      for (Path p : List.of(ca, cert, key)) {
        if (Files.exists(p)) {
          throw new FileAlreadyExistsException(p + " exists (--force replaces ca.crt, tls.crt and tls.key)");
        }
      }
    }
    if (!Files.isDirectory(dir)) {
      createPrivate(dir, true);
    }
    SecureRandom random = new SecureRandom();
    KeyPair caKeys = rsa(random);
    KeyPair nodeKeys = rsa(random);
    Instant now = Instant.now();
    String id = HexFormat.of().formatHex(random.generateSeed(4));
    X500Name caName = new X500Name("CN=corral cluster CA " + id);
    X509Certificate caCert;
    X509Certificate nodeCert;
    try {
      JcaX509ExtensionUtils ext = new JcaX509ExtensionUtils();
      X509v3CertificateBuilder caBuilder = new JcaX509v3CertificateBuilder(caName, serial(random),
          Date.from(now.minus(Duration.ofHours(1))), Date.from(now.plus(CA_VALIDITY)), caName, caKeys.getPublic())
          .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
          .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
          .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(caKeys.getPublic()));
      caCert = sign(caBuilder, caKeys);
      List<GeneralName> altNames = new ArrayList<>();
      for (String n : san) {
        altNames.add(IP_LITERAL.matcher(n).matches() && isAddress(n)
            ? new GeneralName(GeneralName.iPAddress, n) : new GeneralName(GeneralName.dNSName, n));
      }
      X509v3CertificateBuilder nodeBuilder = new JcaX509v3CertificateBuilder(caCert,
          serial(random), Date.from(now.minus(Duration.ofHours(1))), Date.from(now.plus(NODE_VALIDITY)),
          new X500Name("CN=corral-node"), nodeKeys.getPublic())
          .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
          .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature | KeyUsage.keyEncipherment))
          .addExtension(Extension.extendedKeyUsage, false,
              new ExtendedKeyUsage(new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth}))
          .addExtension(Extension.subjectAlternativeName, false, new GeneralNames(altNames.toArray(GeneralName[]::new)))
          .addExtension(Extension.authorityKeyIdentifier, false, ext.createAuthorityKeyIdentifier(caCert))
          .addExtension(Extension.subjectKeyIdentifier, false, ext.createSubjectKeyIdentifier(nodeKeys.getPublic()));
      nodeCert = sign(nodeBuilder, caKeys);
    } catch (OperatorCreationException | org.bouncycastle.cert.CertIOException e) {
      throw new GeneralSecurityException("cannot make the certificates: " + e.getMessage(), e);
    }
    // The key first, so that a failure leaves no certificate without its key.
    Files.deleteIfExists(key);
    createPrivate(key, false);
    Files.writeString(key, pem("PRIVATE KEY", nodeKeys.getPrivate().getEncoded()), StandardCharsets.US_ASCII,
        StandardOpenOption.TRUNCATE_EXISTING);
    Files.writeString(cert, pem("CERTIFICATE", nodeCert.getEncoded()), StandardCharsets.US_ASCII);
    Files.writeString(ca, pem("CERTIFICATE", caCert.getEncoded()), StandardCharsets.US_ASCII);
    return List.of(ca, cert, key);
  }

  private static boolean isAddress(String n) {
    try {
      InetAddress.getByName(n); // a literal: no lookup
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static KeyPair rsa(SecureRandom random) throws GeneralSecurityException {
    KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
    g.initialize(2048, random);
    return g.generateKeyPair();
  }

  private static BigInteger serial(SecureRandom random) {
    return new BigInteger(127, random).add(BigInteger.ONE);
  }

  private static X509Certificate sign(X509v3CertificateBuilder builder, KeyPair signer)
      throws OperatorCreationException, GeneralSecurityException {
    return new JcaX509CertificateConverter()
        .getCertificate(builder.build(new JcaContentSignerBuilder("SHA256withRSA").build(signer.getPrivate())));
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }

  /** A file or directory only its owner can read, where the file system has POSIX permissions. */
  private static void createPrivate(Path p, boolean directory) throws IOException {
    boolean posix = Files.getFileStore(directory ? existingParent(p) : p.toAbsolutePath().getParent())
        .supportsFileAttributeView("posix");
    Set<PosixFilePermission> perms = PosixFilePermissions.fromString(directory ? "rwx------" : "rw-------");
    if (directory) {
      if (posix) {
        Files.createDirectories(p, PosixFilePermissions.asFileAttribute(perms));
      } else {
        Files.createDirectories(p);
      }
    } else if (posix) {
      Files.createFile(p, PosixFilePermissions.asFileAttribute(perms));
    } else {
      Files.createFile(p);
    }
  }

  private static Path existingParent(Path p) {
    Path at = p.toAbsolutePath();
    while (at != null && !Files.exists(at)) {
      at = at.getParent();
    }
    return at;
  }
}
