package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.cluster.ClusterTls;
import java.io.InputStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code corral tls init}: a CA and a shared node certificate that --cluster-tls-dir accepts. */
class ClusterCertificatesTest {
  @TempDir Path dir;

  @Test
  void writesACaAndANodeCertificateTheClusterTlsDirAccepts() throws Exception {
    Path tls = dir.resolve("tls");
    List<Path> written = ClusterCertificates.write(tls, List.of("corral-1.cluster.example", "127.0.0.7"), false);
    assertEquals(List.of(tls.resolve("ca.crt"), tls.resolve("tls.crt"), tls.resolve("tls.key")), written);
    assertEquals(Optional.empty(), new ClusterTls(tls).problem(), "what tls init writes is a valid identity");
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tls.resolve("tls.key"))));
    assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(tls)));

    X509Certificate node = read(tls.resolve("tls.crt"));
    X509Certificate ca = read(tls.resolve("ca.crt"));
    node.verify(ca.getPublicKey());
    assertEquals(-1, node.getBasicConstraints(), "the node certificate is no CA");
    assertTrue(ca.getBasicConstraints() >= 0, "the CA is one");
    assertTrue(node.getExtendedKeyUsage().containsAll(List.of("1.3.6.1.5.5.7.3.1", "1.3.6.1.5.5.7.3.2")),
        "server and client authentication");
    Set<String> names = node.getSubjectAlternativeNames().stream().map(n -> n.get(1).toString())
        .collect(Collectors.toSet());
    assertTrue(names.containsAll(Set.of("localhost", "127.0.0.1", "corral-1.cluster.example", "127.0.0.7")), names.toString());
    assertEquals(Optional.empty(), new ClusterTls(tls).problem());
  }

  @Test
  void refusesToOverwriteUnlessForced() throws Exception {
    ClusterCertificates.write(dir, List.of(), false);
    byte[] ca = Files.readAllBytes(dir.resolve("ca.crt"));
    FileAlreadyExistsException e = assertThrows(FileAlreadyExistsException.class,
        () -> ClusterCertificates.write(dir, List.of(), false));
    assertTrue(e.getMessage().contains("--force"), e.getMessage());
    assertArrayEquals(ca, Files.readAllBytes(dir.resolve("ca.crt")), "nothing replaced");

    ClusterCertificates.write(dir, List.of(), true);
    assertFalse(java.util.Arrays.equals(ca, Files.readAllBytes(dir.resolve("ca.crt"))), "a fresh CA");
    assertEquals(Optional.empty(), new ClusterTls(dir).problem());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve("tls.key"))));
  }

  @Test
  void aCertificateFromAnotherCaOrAMissingFileIsNamed() throws Exception {
    Path a = dir.resolve("a");
    Path b = dir.resolve("b");
    ClusterCertificates.write(a, List.of(), false);
    ClusterCertificates.write(b, List.of(), false);
    Files.copy(b.resolve("ca.crt"), a.resolve("ca.crt"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertEquals(Optional.of(a.resolve("tls.crt").toAbsolutePath() + " is not signed by " + a.resolve("ca.crt").toAbsolutePath()),
        new ClusterTls(a).problem());
    Files.copy(b.resolve("tls.key"), a.resolve("tls.key"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    assertEquals(Optional.of(a.resolve("tls.key").toAbsolutePath() + " is not the key of " + a.resolve("tls.crt").toAbsolutePath()),
        new ClusterTls(a).problem());
    Files.delete(a.resolve("tls.key"));
    assertEquals(Optional.of("cannot read " + a.resolve("tls.key").toAbsolutePath() + ": no such file"),
        new ClusterTls(a).problem());
    Files.writeString(a.resolve("tls.key"), "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n");
    String problem = new ClusterTls(a).problem().orElseThrow();
    assertTrue(problem.endsWith("is not a PEM private key (PKCS#1 or unencrypted PKCS#8)"), problem);
    assertFalse(problem.contains("c2VjcmV0"), "never the key's contents");
  }

  @Test
  void theCommandLine() {
    Cli.Command c = Cli.parse(new String[] {"tls", "init", "/tmp/x", "--name", "corral-1", "--name=10.0.0.1", "--force"},
        Map.of());
    assertEquals(new Cli.TlsInit(Path.of("/tmp/x"), List.of("corral-1", "10.0.0.1"), true), c);
    assertInstanceOf(Cli.Invalid.class, Cli.parse(new String[] {"tls", "init"}, Map.of()));
    assertInstanceOf(Cli.Invalid.class, Cli.parse(new String[] {"tls", "init", "d", "--name", "a b"}, Map.of()));
    assertInstanceOf(Cli.Invalid.class, Cli.parse(new String[] {"tls", "init", "d", "--bogus"}, Map.of()));
    assertInstanceOf(Cli.Invalid.class, Cli.parse(new String[] {"tls", "make", "d"}, Map.of()));
  }

  private static X509Certificate read(Path p) throws Exception {
    try (InputStream in = Files.newInputStream(p)) {
      return (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
  }
}
