package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.corral.testkit.Await;
import dev.corral.testkit.TestNodeExtension;
import dev.corral.testkit.upstream.FakeUpstream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/**
 * The {@code Authorization} header as an attacker (or an odd client) writes it, sent byte for
 * byte over a socket to an in-process node with {@code --tokens-file}: the scheme in any case,
 * Basic's oddities (no padding, an empty user name, no colon, bad base64, another charset), a
 * token holding {@code :}, an over-long header; and no token ever written to a log, including
 * tokens Pekko's header model cannot parse (it used to log such a header's whole value as an
 * "Illegal header" warning).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientAuthHeaderTest {
  static final String CI = ClientAuthHttpTest.CI_TOKEN;
  static final String COLON_TOKEN = "tok:with:colons";
  static final String UMLAUT_TOKEN = "tök-ünï";

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .otherwise((exchange, n) -> FakeUpstream.send(exchange, 200, "ok".getBytes(StandardCharsets.UTF_8)))
      .args(n -> {
        Path file = n.dir().resolve("tokens");
        Files.writeString(file, "ci " + ClientAuthHttpTest.sha256(CI) + "\ncolon " + ClientAuthHttpTest.sha256(COLON_TOKEN)
            + "\numlaut " + ClientAuthHttpTest.sha256(UMLAUT_TOKEN) + "\n");
        return new String[] {"--tokens-file", file.toString()};
      });

  /** Every log line of the node's JVM, formatted. */
  private final ConcurrentLinkedQueue<String> logged = new ConcurrentLinkedQueue<>();
  private final AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
    @Override
    protected void append(ILoggingEvent e) {
      logged.add(e.getLoggerName() + " " + e.getFormattedMessage());
    }
  };

  @BeforeAll
  void capture() {
    appender.start();
    root().addAppender(appender);
  }

  @AfterAll
  void release() {
    root().detachAppender(appender);
  }

  private static Logger root() {
    return (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
  }

  /** The status line and body of {@code GET /up/a.tgz} with these header lines, written as ISO-8859-1 bytes. */
  private String[] get(String... headerLines) throws Exception {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), node.server().address().getPort())) {
      s.setSoTimeout(20_000);
      StringBuilder request = new StringBuilder("GET /up/a.tgz HTTP/1.1\r\nHost: corral\r\nConnection: close\r\n");
      for (String h : headerLines) {
        request.append(h).append("\r\n");
      }
      s.getOutputStream().write(request.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
      ByteArrayOutputStream got = new ByteArrayOutputStream();
      try (InputStream in = s.getInputStream()) {
        in.transferTo(got);
      }
      String r = got.toString(StandardCharsets.ISO_8859_1);
      return new String[] {r.substring(0, r.indexOf("\r\n")), r.substring(r.indexOf("\r\n\r\n") + 4)};
    }
  }

  private int status(String... headerLines) throws Exception {
    return Integer.parseInt(get(headerLines)[0].split(" ")[1]);
  }

  private static String basic(String userColonPassword, java.nio.charset.Charset charset) {
    return "Authorization: Basic " + Base64.getEncoder().encodeToString(userColonPassword.getBytes(charset));
  }

  private static String basic(String userColonPassword) {
    return basic(userColonPassword, StandardCharsets.UTF_8);
  }

  @Test
  void theSchemeInAnyCaseAndBasicWithAnyUserNameRead() throws Exception {
    assertEquals(200, status("Authorization: bearer " + CI));
    assertEquals(200, status("Authorization: BEARER " + CI));
    assertEquals(200, status(basic("u:" + CI).replace("Basic", "bASIC")));
    assertEquals(200, status("Authorization: bearer " + COLON_TOKEN), "a header Pekko leaves raw, in lower case");
    assertEquals(200, status(basic(":" + CI)), "an empty user name");
    assertEquals(200, status(basic("u:" + CI).replaceAll("=+$", "")), "base64 without its padding");
  }

  @Test
  void basicWithoutAPasswordOrNotBase64IsUnauthorized() throws Exception {
    assertEquals(401, status(basic(CI)), "no colon: the token is the user name, there is no password");
    assertEquals(401, status(basic(CI + ":")), "the token as user name, an empty password");
    assertEquals(401, status("Authorization: Basic !!!" + Base64.getEncoder().encodeToString(("u:" + CI).getBytes())));
    assertEquals(401, status("Authorization: Basic"));
    assertEquals(401, status("Authorization: Bearer"));
    assertEquals(401, status("Authorization: Digest username=\"u\", response=\"" + CI + "\""));
    assertEquals(401, status("Authorization: " + CI), "no scheme");
  }

  @Test
  void aTokenHoldingColonsIsTheWholePasswordAfterTheFirstColon() throws Exception {
    assertEquals(200, status(basic("token:" + COLON_TOKEN)));
    assertEquals(200, status("Authorization: Bearer " + COLON_TOKEN));
    assertEquals(401, status(basic(COLON_TOKEN)), "user 'tok', password 'with:colons'");
  }

  @Test
  void aNonAsciiTokenIsItsUtf8Bytes() throws Exception {
    assertEquals(200, status(basic("u:" + UMLAUT_TOKEN, StandardCharsets.UTF_8)));
    assertEquals(401, status(basic("u:" + UMLAUT_TOKEN, StandardCharsets.ISO_8859_1)), "other bytes, another secret");
    String utf8Header = new String(("Authorization: Bearer " + UMLAUT_TOKEN).getBytes(StandardCharsets.UTF_8),
        StandardCharsets.ISO_8859_1);
    assertEquals(200, status(utf8Header));
  }

  @Test
  void anOverLongHeaderIsA400ThatDoesNotEchoIt() throws Exception {
    String[] r = get("Authorization: Bearer " + "s3cr3t".repeat(20_000));
    assertTrue(r[0].contains(" 400 "), r[0]);
    assertFalse(r[1].contains("s3cr3t"), r[1]);
    assertEquals(200, status("Authorization: Bearer " + CI), "the node goes on");
  }

  @Test
  void noTokenReachesTheLogEvenWhenPekkoCannotParseTheHeader() throws Exception {
    String encodedColon = Base64.getEncoder().encodeToString(("u:" + COLON_TOKEN).getBytes(StandardCharsets.UTF_8));
    // Accepted tokens that are not RFC 7235 token68: Pekko keeps them as raw headers.
    assertEquals(200, status("Authorization: Bearer " + COLON_TOKEN));
    assertEquals(200, status(new String(("Authorization: Bearer " + UMLAUT_TOKEN).getBytes(StandardCharsets.UTF_8),
        StandardCharsets.ISO_8859_1)));
    // Refused, but still secrets a client meant to send.
    assertEquals(401, status("Authorization: Basic *" + encodedColon));
    assertEquals(401, status("Authorization: Bearer token=\"" + CI + "\""));
    // A header Pekko also cannot parse, sent last: once its warning is logged, any warning of the
    // requests before it is logged too (one event stream, in order).
    assertEquals(200, status("Authorization: Bearer " + CI, "If-Modified-Since: not-a-date"));
    Await.until("the warning about If-Modified-Since", Duration.ofSeconds(20),
        () -> logged.stream().anyMatch(l -> l.toLowerCase(java.util.Locale.ROOT).contains("if-modified-since")));
    for (String secret : List.of(COLON_TOKEN, UMLAUT_TOKEN, encodedColon, CI, "tok:with")) {
      assertEquals(List.of(), logged.stream().filter(l -> l.contains(secret)).toList(), "logged: " + secret);
    }
  }
}
