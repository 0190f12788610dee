package dev.corral.http.tls;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Renewed files take effect on the next handshake after the check interval; broken ones never do. */
class ReloadingKeyManagerTest {
  @TempDir Path dir;

  private final AtomicLong now = new AtomicLong();

  private static void touch(Path file, int secondsLater) throws Exception {
    Files.setLastModifiedTime(file, FileTime.from(Instant.now().plusSeconds(secondsLater)));
  }

  private X509Certificate served(ReloadingKeyManager keys) {
    String alias = keys.chooseEngineServerAlias("RSA", null, null);
    return keys.getCertificateChain(alias)[0];
  }

  @Test
  void aRenewedPairIsServedAfterTheCheckIntervalAndABrokenOneNever() throws Exception {
    TestCertificates ca = TestCertificates.newCa(dir, "ca");
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    ca.leaf("first", KeyFormat.RSA_PKCS8, cert, key);
    ReloadingKeyManager keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(2), now::get);
    assertEquals("CN=first", served(keys).getSubjectX500Principal().getName());

    ca.leaf("second", KeyFormat.RSA_PKCS1, cert, key);
    touch(cert, 1);
    assertEquals("CN=first", served(keys).getSubjectX500Principal().getName(), "not looked at before the interval");
    now.addAndGet(Duration.ofSeconds(2).toNanos());
    X509Certificate second = served(keys);
    assertEquals("CN=second", second.getSubjectX500Principal().getName());

    // A half-written renewal: the certificate of a third pair beside the second's key.
    Path other = dir.resolve("other");
    TestCertificates.Pair third = ca.leaf("third", KeyFormat.RSA_PKCS8, dir.resolve("third.crt"), dir.resolve("third.key"));
    Files.copy(third.cert(), cert, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    touch(cert, 2);
    now.addAndGet(Duration.ofSeconds(2).toNanos());
    assertEquals(second, served(keys), "the previous pair stays");
    assertNotEquals(null, keys.getPrivateKey(keys.chooseEngineServerAlias("RSA", null, null)));

    // The key follows: the pair is whole again and is taken.
    Files.copy(third.key(), key, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    touch(key, 3);
    now.addAndGet(Duration.ofSeconds(2).toNanos());
    assertEquals("CN=third", served(keys).getSubjectX500Principal().getName());
  }

  @Test
  void aHandshakeHalfWayThroughAReloadKeepsItsPair() throws Exception {
    TestCertificates ca = TestCertificates.newCa(dir, "ca");
    Path cert = dir.resolve("tls.crt");
    Path key = dir.resolve("tls.key");
    ca.leaf("first", KeyFormat.RSA_PKCS8, cert, key);
    ReloadingKeyManager keys = new ReloadingKeyManager(cert, key, Duration.ofSeconds(2), now::get);
    String alias = keys.chooseEngineServerAlias("RSA", null, null);
    ca.leaf("second", KeyFormat.RSA_PKCS8, cert, key);
    touch(cert, 1);
    now.addAndGet(Duration.ofSeconds(2).toNanos());
    keys.chooseEngineServerAlias("RSA", null, null); // another handshake reloads
    assertEquals("CN=first", keys.getCertificateChain(alias)[0].getSubjectX500Principal().getName());
    KeyMatch.check(keys.getCertificateChain(alias)[0], keys.getPrivateKey(alias), key);
  }
}
