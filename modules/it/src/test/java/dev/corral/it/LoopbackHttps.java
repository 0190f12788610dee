package dev.corral.it;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executor;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * A test's HTTPS server on 127.0.0.1 with a self-signed certificate for {@code 127.0.0.1}, made by
 * the JDK's keytool in the test's directory (no key is checked in). Clients trust it through the
 * certificate's PEM file, {@code NAME.pem} beside the key store.
 */
final class LoopbackHttps {
  private LoopbackHttps() {}

  /** Started; its certificate is {@link #certificate(Path, String)}. */
  static HttpsServer start(Path dir, String name, Executor pool, HttpHandler handler) throws Exception {
    Path keystore = dir.resolve(name + ".p12");
    String keytool = CorralProcess.javaExecutable().resolveSibling("keytool").toString();
    ClientCommand.run(dir, Map.of(), Duration.ofMinutes(1), List.of(keytool, "-genkeypair", "-alias", name,
        "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1",
        "-validity", "2", "-storetype", "PKCS12", "-keystore", keystore.toString(), "-storepass", "changeit",
        "-keypass", "changeit")).ok();
    ClientCommand.run(dir, Map.of(), Duration.ofMinutes(1), List.of(keytool, "-exportcert", "-rfc", "-alias", name,
        "-keystore", keystore.toString(), "-storepass", "changeit", "-file", certificate(dir, name).toString())).ok();
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      ks.load(in, "changeit".toCharArray());
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, "changeit".toCharArray());
    SSLContext tls = SSLContext.getInstance("TLS");
    tls.init(kmf.getKeyManagers(), null, null);
    HttpsServer server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setHttpsConfigurator(new HttpsConfigurator(tls));
    server.setExecutor(pool);
    server.createContext("/", handler);
    server.start();
    return server;
  }

  /** The PEM certificate clients trust. */
  static Path certificate(Path dir, String name) {
    return dir.resolve(name + ".pem");
  }
}
