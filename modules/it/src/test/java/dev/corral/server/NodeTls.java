package dev.corral.server;

import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** A test CA and a node certificate it signed, made once (in a temp dir), for in-JVM nodes over TLS. */
final class NodeTls {
  static final TestCertificates CA;
  static final TestCertificates.Pair PAIR;

  static {
    try {
      Path dir = Files.createTempDirectory("corral-tls-");
      CA = TestCertificates.newCa(dir, "corral");
      PAIR = CA.leaf("node", KeyFormat.RSA_PKCS8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private NodeTls() {}

  /** The flags that make a node's client port HTTPS with {@link #PAIR}. */
  static String[] args() {
    return new String[] {"--tls-cert", PAIR.cert().toString(), "--tls-key", PAIR.key().toString()};
  }
}
