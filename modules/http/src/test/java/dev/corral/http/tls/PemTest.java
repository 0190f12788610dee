package dev.corral.http.tls;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class PemTest {
  @TempDir Path dir;

  @ParameterizedTest
  @EnumSource(KeyFormat.class)
  void everyKeyFormatLoadsAndMatchesItsCertificate(KeyFormat format) throws Exception {
    TestCertificates.Pair pair = TestCertificates.newCa(dir, "ca").leaf("leaf", format);
    String pem = Files.readString(pair.key());
    assertTrue(pem.contains(switch (format) {
      case RSA_PKCS1 -> "BEGIN RSA PRIVATE KEY";
      case EC_SEC1 -> "BEGIN EC PRIVATE KEY";
      default -> "BEGIN PRIVATE KEY";
    }), pem.lines().findFirst().orElse(""));
    PrivateKey key = Pem.privateKey(pair.key());
    KeyMatch.check(Pem.certificates(pair.cert()).get(0), key, pair.key());
    ServerTls tls = ServerTls.load(pair.cert(), pair.key(), Duration.ofSeconds(2));
    assertEquals("CN=leaf", tls.keys().certificate().getSubjectX500Principal().getName());
  }

  @Test
  void aKeyOfAnotherCertificateIsRefused() throws Exception {
    TestCertificates ca = TestCertificates.newCa(dir, "ca");
    TestCertificates.Pair a = ca.leaf("a", KeyFormat.RSA_PKCS8);
    TestCertificates.Pair b = ca.leaf("b", KeyFormat.RSA_PKCS8);
    Pem.PemException e = assertThrows(Pem.PemException.class, () -> ServerTls.load(a.cert(), b.key(), Duration.ofSeconds(2)));
    assertEquals(b.key() + ": the private key does not belong to the certificate CN=a", e.getMessage());
  }

  @Test
  void badFilesAreNamedNeverShown() throws Exception {
    Path junk = dir.resolve("junk.pem");
    Files.writeString(junk, "secret-looking text\n");
    Pem.PemException noCert = assertThrows(Pem.PemException.class, () -> Pem.certificates(junk));
    assertEquals(junk + ": no PEM certificate (-----BEGIN CERTIFICATE-----) found", noCert.getMessage());
    Pem.PemException noKey = assertThrows(Pem.PemException.class, () -> Pem.privateKey(junk));
    assertFalse(noKey.getMessage().contains("secret"), noKey.getMessage());
    Path missing = dir.resolve("missing.pem");
    assertEquals(missing + ": cannot read (NoSuchFileException)",
        assertThrows(Pem.PemException.class, () -> Pem.certificates(missing)).getMessage());
    Path encrypted = dir.resolve("enc.key");
    Files.writeString(encrypted, "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n");
    assertTrue(assertThrows(Pem.PemException.class, () -> Pem.privateKey(encrypted)).getMessage()
        .contains("the private key is encrypted"));
  }
}
