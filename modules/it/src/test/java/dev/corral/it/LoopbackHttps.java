package dev.corral.it;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.corral.testkit.upstream.TestCertificates;
import dev.corral.testkit.upstream.TestCertificates.KeyFormat;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.Executor;
import javax.net.ssl.SSLContext;

/**
 * A test's HTTPS server on 127.0.0.1 with a certificate for {@code 127.0.0.1} signed by a CA of its
 * own, both made by {@code openssl} in the test's directory ({@link TestCertificates}; no key is
 * checked in). Clients trust the CA's certificate, the PEM file {@code NAME.pem}. (The JDK's keytool
 * made them before: two JVM starts a server, most of a test's time on a busy machine.)
 */
final class LoopbackHttps {
  private LoopbackHttps() {}

  /** Started; the certificate its clients trust is {@link #certificate(Path, String)}. */
  static HttpsServer start(Path dir, String name, Executor pool, HttpHandler handler) throws Exception {
    TestCertificates ca = TestCertificates.newCa(dir, name);
    SSLContext tls = TestCertificates.context(ca.leaf(name, KeyFormat.EC_PKCS8), null);
    Files.copy(ca.caCert(), certificate(dir, name), StandardCopyOption.REPLACE_EXISTING);
    HttpsServer server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setHttpsConfigurator(new HttpsConfigurator(tls));
    server.setExecutor(pool);
    server.createContext("/", handler);
    server.start();
    return server;
  }

  /** The PEM certificate clients trust: the CA's. */
  static Path certificate(Path dir, String name) {
    return dir.resolve(name + ".pem");
  }
}
