package dev.corral.testkit.upstream;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLPeerUnverifiedException;

/**
 * An HTTPS upstream on 127.0.0.1 with its own certificate: answers every path with a fixed body
 * and records the paths it served and the client certificate's subject, if any. With
 * {@code requireClientCert} it refuses a handshake without a certificate its context trusts.
 */
public final class TlsUpstream implements AutoCloseable {
  private final HttpsServer server;
  private final ExecutorService executor = Executors.newCachedThreadPool();
  public final List<String> served = new CopyOnWriteArrayList<>();
  public final List<String> clientSubjects = new CopyOnWriteArrayList<>();

  public TlsUpstream(SSLContext context, boolean requireClientCert, byte[] body) {
    try {
      server = HttpsServer.create(new InetSocketAddress("127.0.0.1", 0), 64);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    server.setHttpsConfigurator(new HttpsConfigurator(context) {
      @Override
      public void configure(HttpsParameters params) {
        javax.net.ssl.SSLParameters p = context.getDefaultSSLParameters();
        p.setNeedClientAuth(requireClientCert);
        params.setSSLParameters(p);
      }
    });
    server.createContext("/", exchange -> {
      try (exchange) {
        try {
          var peer = ((com.sun.net.httpserver.HttpsExchange) exchange).getSSLSession().getPeerCertificates();
          clientSubjects.add(((java.security.cert.X509Certificate) peer[0]).getSubjectX500Principal().getName());
        } catch (SSLPeerUnverifiedException e) {
          // no client certificate
        }
        served.add(exchange.getRequestURI().getPath());
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    });
    server.setExecutor(executor);
    server.start();
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** The base URL, {@code https://127.0.0.1:PORT}. */
  public String url() {
    return "https://127.0.0.1:" + port();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
