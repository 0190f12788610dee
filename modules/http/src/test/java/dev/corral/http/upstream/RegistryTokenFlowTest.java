package dev.corral.http.upstream;

import static java.nio.charset.StandardCharsets.UTF_8;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.corral.core.upstream.UpstreamException;
import dev.corral.core.upstream.UpstreamRequest;
import dev.corral.core.upstream.UpstreamResponse;
import dev.corral.http.metrics.Metrics;
import dev.corral.testkit.upstream.FakeUpstream;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.slf4j.LoggerFactory;

/**
 * The registry token flow against a fake registry that demands Bearer tokens from a fake token
 * realm, both on 127.0.0.1. Time is a ticker the tests move; nothing sleeps.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RegistryTokenFlowTest {
  private static final String REPO = "oci";
  private static final String SERVICE = "registry.test";
  private static final Credential ALICE = new Credential.Basic("alice", "pass-w0rd-secret");

  private final ActorTestKit testKit = ActorTestKit.create("RegistryTokenFlowTest");
  private final ActorSystem<Void> system = testKit.system();
  private final List<AutoCloseable> fakes = new ArrayList<>();
  private final AtomicLong now = new AtomicLong(1_000_000_000L);
  private Metrics metrics;

  /** Tokens the realm issued that the registry accepts. */
  private final Set<String> valid = ConcurrentHashMap.newKeySet();
  private final AtomicInteger issued = new AtomicInteger();
  /** The realm's answer for a freshly issued token. */
  private final AtomicReference<String> answerFormat = new AtomicReference<>();
  /** Counted down by every 401 the registry sends for lack of a valid token, before it answers; held on {@link #hold401s}. */
  private final AtomicReference<CountDownLatch> hold401s = new AtomicReference<>();
  private final AtomicInteger challenges = new AtomicInteger();
  private final AtomicReference<String> challengeRealm = new AtomicReference<>();
  private FakeUpstream realm;
  private FakeUpstream registry;
  private FakeUpstream cdn;

  private static final UpstreamSettings FAST =
      UpstreamSettings.DEFAULTS.withRetries(1, Duration.ofMillis(20)).withRegistryTokens(true);

  @BeforeEach
  void start() {
    valid.clear();
    issued.set(0);
    challenges.set(0);
    hold401s.set(null);
    answerFormat.set("{\"token\":\"%s\"}");
    realm = fake((ex, n) -> issueToken(ex));
    cdn = fake((ex, n) -> FakeUpstream.send(ex, 200, ("cdn" + ex.getRequestURI().getPath()).getBytes(UTF_8)));
    challengeRealm.set(realm.url("/token"));
    registry = fake((ex, n) -> {
      String path = ex.getRequestURI().getPath();
      String auth = ex.getRequestHeaders().getFirst("Authorization");
      if (path.equals("/token")) {
        issueToken(ex); // a realm on the registry's own origin
      } else if (auth == null || !auth.startsWith("Bearer ") || !valid.contains(auth.substring(7))) {
        challenges.incrementAndGet();
        CountDownLatch hold = hold401s.get();
        if (hold != null) {
          hold.countDown();
          hold.await(20, SECONDS);
        }
        String name = path.substring("/v2/".length(), path.lastIndexOf('/', path.lastIndexOf('/') - 1));
        ex.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"" + challengeRealm.get() + "\",service=\""
            + SERVICE + "\",scope=\"repository:" + name + ":pull\"");
        FakeUpstream.send(ex, 401, "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}".getBytes(UTF_8));
      } else if (path.contains("sha256:redirect")) {
        ex.getResponseHeaders().add("Location", cdn.url("/object" + path));
        FakeUpstream.send(ex, 307, new byte[0]);
      } else {
        FakeUpstream.send(ex, 200, ("blob" + path).getBytes(UTF_8));
      }
    });
  }

  private void issueToken(com.sun.net.httpserver.HttpExchange ex) throws java.io.IOException {
    String token = "tok-" + issued.incrementAndGet() + "-secret";
    valid.add(token);
    FakeUpstream.send(ex, 200, String.format(answerFormat.get(), token).getBytes(UTF_8));
  }

  @AfterEach
  void closeFakes() throws Exception {
    CountDownLatch hold = hold401s.get();
    if (hold != null) while (hold.getCount() > 0) hold.countDown();
    for (AutoCloseable f : fakes) f.close();
    fakes.clear();
  }

  @AfterAll
  void stop() {
    testKit.shutdownTestKit();
  }

  private FakeUpstream fake(FakeUpstream.Handler handler) {
    FakeUpstream f = new FakeUpstream(handler);
    fakes.add(f);
    return f;
  }

  private static String authority(FakeUpstream f) {
    return URI.create(f.url("/")).getRawAuthority();
  }

  /** The registry as the repository's upstream, the realm and the CDN on its allowed-hosts. */
  private HttpUpstream upstream(UpstreamSettings settings) {
    return upstream(settings, List.of(AllowedHost.parse(authority(realm)), AllowedHost.parse(authority(cdn))));
  }

  private HttpUpstream upstream(UpstreamSettings settings, List<AllowedHost> allowed) {
    metrics = new Metrics();
    String base = registry.url("/");
    return new HttpUpstream(system, metrics,
        Map.of(REPO, new RepoUpstream(base, settings, UpstreamScope.of(base).allowing(allowed))), Optional.empty(),
        now::get);
  }

  private CompletableFuture<UpstreamResponse> get(HttpUpstream upstream, String path) {
    return upstream.get(UpstreamRequest.get(REPO, registry.url(path))).toCompletableFuture();
  }

  private String body(CompletableFuture<UpstreamResponse> response) throws Exception {
    UpstreamResponse r = response.get(20, SECONDS);
    return r.body().runWith(Sink.fold(ByteString.emptyByteString(), ByteString::concat), system)
        .toCompletableFuture().get(20, SECONDS).utf8String();
  }

  private UpstreamException failure(HttpUpstream upstream, String path) {
    ExecutionException e = assertThrows(ExecutionException.class, () -> get(upstream, path).get(20, SECONDS));
    return assertInstanceOf(UpstreamException.class, e.getCause());
  }

  private double tokenFetches(String outcome) {
    return metrics.upstreamTokenFetches.labelValues(REPO, outcome).get();
  }

  private void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  @Test
  void oneTokenPerScopeServesManyRequestsAndOnlyTheFirstMeetsA401() throws Exception {
    HttpUpstream upstream = upstream(FAST);

    for (int i = 0; i < 5; i++) {
      assertEquals("blob/v2/team/app/blobs/sha256:a" + i, body(get(upstream, "/v2/team/app/blobs/sha256:a" + i)));
    }
    assertEquals(1, realm.requests());
    assertEquals(1, challenges.get(), "later requests of the scope carry the token before any challenge");
    assertEquals("/token?service=registry.test&scope=repository%3Ateam%2Fapp%3Apull", realm.targets.get(0));
    assertEquals("Bearer tok-1-secret", registry.last().header("Authorization"));

    assertEquals("blob/v2/team/other/manifests/latest", body(get(upstream, "/v2/team/other/manifests/latest")));
    assertEquals("blob/v2/team/other/tags/list", body(get(upstream, "/v2/team/other/tags/list")));
    assertEquals(2, realm.requests(), "one more scope, one more token");
    assertEquals(2, challenges.get());
    assertEquals(2.0, tokenFetches("ok"));
  }

  @Test
  void concurrentRequestsForOneScopeShareOneTokenFetch() throws Exception {
    int n = 16;
    hold401s.set(new CountDownLatch(n)); // every request meets its 401 before any token exists
    HttpUpstream upstream = upstream(FAST);

    List<CompletableFuture<UpstreamResponse>> responses = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      responses.add(get(upstream, "/v2/team/app/blobs/sha256:c" + i));
    }
    for (int i = 0; i < n; i++) {
      assertEquals("blob/v2/team/app/blobs/sha256:c" + i, body(responses.get(i)));
    }
    assertEquals(n, challenges.get());
    assertEquals(1, realm.requests());
    assertEquals(1.0, tokenFetches("ok"));
  }

  @Test
  void aTokenIsReusedUntilItExpiresThenFetchedAgain() throws Exception {
    // No expires_in: 60 s, less a 6 s margin.
    HttpUpstream upstream = upstream(FAST);
    body(get(upstream, "/v2/team/app/manifests/v1"));
    assertEquals(1, realm.requests());

    advance(Duration.ofSeconds(53));
    body(get(upstream, "/v2/team/app/manifests/v2"));
    assertEquals(1, realm.requests(), "53 s in: kept");

    advance(Duration.ofSeconds(2));
    body(get(upstream, "/v2/team/app/manifests/v3"));
    assertEquals(2, realm.requests(), "55 s in: expired, fetched again");
    assertEquals("Bearer tok-2-secret", registry.last().header("Authorization"));

    // An OAuth-style answer with its own lifetime: 300 s, less 10 s.
    answerFormat.set("{\"access_token\":\"%s\",\"expires_in\":300,\"issued_at\":\"2001-01-01T00:00:00Z\"}");
    body(get(upstream, "/v2/team/oauth/manifests/v1"));
    advance(Duration.ofSeconds(289));
    body(get(upstream, "/v2/team/oauth/manifests/v2"));
    assertEquals(3, realm.requests(), "289 s in: kept (issued_at is not the node's clock)");
    advance(Duration.ofSeconds(2));
    body(get(upstream, "/v2/team/oauth/manifests/v3"));
    assertEquals(4, realm.requests(), "291 s in: fetched again");
  }

  @Test
  void aRefusedTokenIsRefreshedOnceThenThe401IsTheAnswer() throws Exception {
    HttpUpstream upstream = upstream(FAST);
    body(get(upstream, "/v2/team/app/blobs/sha256:r0"));
    assertEquals(1, realm.requests());

    // The registry stops accepting the kept token: one refresh, and the request succeeds.
    valid.clear();
    assertEquals("blob/v2/team/app/blobs/sha256:r1", body(get(upstream, "/v2/team/app/blobs/sha256:r1")));
    assertEquals(2, realm.requests());

    // Many requests meet the 401 with the same refused token: still one refresh.
    int n = 8;
    valid.clear();
    hold401s.set(new CountDownLatch(n));
    List<CompletableFuture<UpstreamResponse>> responses = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      responses.add(get(upstream, "/v2/team/app/blobs/sha256:s" + i));
    }
    for (int i = 0; i < n; i++) {
      assertEquals("blob/v2/team/app/blobs/sha256:s" + i, body(responses.get(i)));
    }
    assertEquals(3, realm.requests());
    hold401s.set(null);

    // A registry that refuses every token: one refresh, then its 401 is the answer.
    answerFormat.set("{\"token\":\"refused-%s\"}");
    valid.clear();
    int before = registry.requests();
    UpstreamResponse refused = get(upstream, "/v2/team/app/blobs/sha256:t").get(20, SECONDS);
    refused.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
    assertEquals(401, refused.status());
    assertEquals(4, realm.requests());
    assertEquals(2, registry.requests() - before, "the request with the kept token, then once with the new one");

    // The refused new token is not kept: the next fetch asks the realm again (and is refused
    // again), even one whose path names no scope and so carries no token before its challenge.
    UpstreamResponse again = get(upstream, "/v2/team/app/referrers/sha256:u").get(20, SECONDS);
    again.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
    assertEquals(401, again.status());
    assertEquals(5, realm.requests());
    assertEquals(4, registry.requests() - before);
  }

  @Test
  void theCredentialGoesToARealmInTheScopeAndOnlyOnTheUpstreamsOwnChallenge() throws Exception {
    String basic = ALICE.authorization();

    // The realm on allowed-hosts: the operator's consent, the credential goes with the token request.
    HttpUpstream listed = upstream(FAST.withCredential(ALICE));
    body(get(listed, "/v2/team/app/manifests/v1"));
    assertEquals(basic, realm.last().header("Authorization"));
    assertEquals(basic, registry.seen.get(0).header("Authorization"), "Basic upstreams keep working");
    assertEquals("Bearer tok-1-secret", registry.seen.get(1).header("Authorization"));

    // Without a credential the realm is asked anonymously.
    HttpUpstream anonymous = upstream(FAST);
    body(get(anonymous, "/v2/team/anon/manifests/v1"));
    assertNull(realm.last().header("Authorization"));

    // The realm on the repository's own origin, inside its base path.
    challengeRealm.set(registry.url("/token"));
    HttpUpstream own = upstream(FAST.withCredential(ALICE), List.of());
    UpstreamResponse answer = get(own, "/v2/team/own/manifests/v1").get(20, SECONDS);
    answer.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
    FakeUpstream.Seen tokenRequest = registry.seen.stream().filter(s -> s.path().equals("/token")).findFirst().orElseThrow();
    assertEquals(basic, tokenRequest.header("Authorization"));
    assertEquals(2, realm.requests(), "not the listed realm");

    // A 401 from a redirect target elsewhere is its answer: no token flow, nothing sent to the realm.
    challengeRealm.set(realm.url("/token"));
    FakeUpstream challengingCdn = fake((ex, n) -> {
      ex.getResponseHeaders().add("WWW-Authenticate", "Bearer realm=\"" + realm.url("/token") + "\",service=\"x\"");
      FakeUpstream.send(ex, 401, new byte[0]);
    });
    FakeUpstream redirecting = fake((ex, n) -> {
      ex.getResponseHeaders().add("Location", challengingCdn.url("/object"));
      FakeUpstream.send(ex, 307, new byte[0]);
    });
    metrics = new Metrics();
    String base = redirecting.url("/");
    HttpUpstream viaRedirect = new HttpUpstream(system, metrics, Map.of(REPO, new RepoUpstream(base,
        FAST.withCredential(ALICE), UpstreamScope.of(base).allowing(List.of(AllowedHost.parse(authority(realm)),
            AllowedHost.parse(authority(challengingCdn)))))), Optional.empty(), now::get);
    int realmBefore = realm.requests();
    UpstreamResponse cdnAnswer = viaRedirect.get(UpstreamRequest.get(REPO, redirecting.url("/v2/team/app/blobs/sha256:x")))
        .toCompletableFuture().get(20, SECONDS);
    cdnAnswer.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
    assertEquals(401, cdnAnswer.status());
    assertEquals(realmBefore, realm.requests());
    assertNull(challengingCdn.last().header("Authorization"));
    assertEquals(1, challengingCdn.requests());
  }

  @Test
  void theTokenNeverGoesToARedirectTargetOnAnotherHost() throws Exception {
    HttpUpstream upstream = upstream(FAST.withCredential(ALICE));

    // The first meets the challenge and is asked again with the token; the second carries it at once.
    assertEquals("cdn/object/v2/team/app/blobs/sha256:redirect1", body(get(upstream, "/v2/team/app/blobs/sha256:redirect1")));
    assertEquals("cdn/object/v2/team/app/blobs/sha256:redirect2", body(get(upstream, "/v2/team/app/blobs/sha256:redirect2")));
    assertEquals(1, challenges.get());
    assertEquals(2, cdn.requests());
    for (FakeUpstream.Seen seen : cdn.seen) {
      assertNull(seen.header("Authorization"));
    }
    assertEquals("Bearer tok-1-secret", registry.last().header("Authorization"));
  }

  @Test
  void aRealmOutsideTheScopeIsRefusedBeforeAnyRequestToIt() {
    HttpUpstream upstream = upstream(FAST.withCredential(ALICE), List.of(AllowedHost.parse(authority(cdn))));

    UpstreamException e = failure(upstream, "/v2/team/app/manifests/v1");

    assertEquals("refused", e.reason());
    assertFalse(e.getMessage().contains("127.0.0.1"), e.getMessage());
    assertEquals(0, realm.requests());
    assertEquals(1.0, tokenFetches("refused"));
  }

  @Test
  void a401WithoutABearerChallengeIsTheAnswerAsBefore() throws Exception {
    FakeUpstream basicOnly = fake((ex, n) -> {
      if (ex.getRequestURI().getPath().endsWith("/basic")) {
        // A realm that looks like a token realm: Basic all the same.
        ex.getResponseHeaders().add("WWW-Authenticate", "Basic realm=\"" + realm.url("/token") + "\",service=\"s\"");
      }
      FakeUpstream.send(ex, 401, new byte[0]);
    });
    metrics = new Metrics();
    String base = basicOnly.url("/");
    HttpUpstream upstream = new HttpUpstream(system, metrics, Map.of(REPO, new RepoUpstream(base,
        FAST.withCredential(ALICE), UpstreamScope.of(base).allowing(List.of(AllowedHost.parse(authority(realm)))))),
        Optional.empty(), now::get);
    for (String path : List.of("/v2/a/manifests/basic", "/v2/a/manifests/none")) {
      UpstreamResponse r = upstream.get(UpstreamRequest.get(REPO, basicOnly.url(path))).toCompletableFuture().get(20, SECONDS);
      r.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
      assertEquals(401, r.status(), path);
    }
    assertEquals(2, basicOnly.requests());
    assertEquals(0, realm.requests());
    assertEquals(ALICE.authorization(), basicOnly.last().header("Authorization"));

    // The switch off: a Bearer challenge is an answer like any 401, as before.
    HttpUpstream off = upstream(FAST.withRegistryTokens(false));
    UpstreamResponse r = get(off, "/v2/team/app/manifests/v1").get(20, SECONDS);
    r.body().runWith(Sink.ignore(), system).toCompletableFuture().get(20, SECONDS);
    assertEquals(401, r.status());
    assertEquals(0, realm.requests());
    assertEquals(0.0, tokenFetches("ok"));
  }

  @Test
  void neitherTokenNorCredentialReachesALogOrAMessage() throws Exception {
    List<String> logged = new CopyOnWriteArrayList<>();
    AppenderBase<ILoggingEvent> appender = new AppenderBase<>() {
      @Override
      protected void append(ILoggingEvent e) {
        logged.add(e.getLoggerName() + " " + e.getFormattedMessage()
            + (e.getThrowableProxy() == null ? "" : " " + e.getThrowableProxy().getMessage()));
      }
    };
    Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
    Logger upstreamLog = (Logger) LoggerFactory.getLogger("dev.corral.http.upstream");
    Level level = upstreamLog.getLevel();
    appender.start();
    root.addAppender(appender);
    upstreamLog.setLevel(Level.DEBUG);
    List<String> messages = new ArrayList<>();
    try {
      HttpUpstream upstream = upstream(FAST.withCredential(ALICE));
      body(get(upstream, "/v2/team/app/manifests/v1"));
      valid.clear();
      body(get(upstream, "/v2/team/app/manifests/v2"));

      // Answers without a usable token: cut JSON, an unquoted token (the parser would quote it), a
      // token with a line break, not an object.
      for (String format : List.of("{\"token\":\"%s", "{\"token\":secret_%s}", "{\"token\":\"%s\\r\\nX-Injected: 1\"}",
          "[\"%s\"]")) {
        answerFormat.set(format);
        UpstreamException e = failure(upstream, "/v2/team/bad" + messages.size() + "/manifests/v1");
        assertEquals(HttpUpstream.TOKEN, e.reason());
        messages.add(e.getMessage());
      }
      assertEquals(4.0, tokenFetches("invalid"));
      assertEquals(6, realm.requests(), "each bad answer fails its fetch, none is kept");
      FakeUpstream refusing = fake((ex, n) -> FakeUpstream.send(ex, 401, "tok-refusal-secret".getBytes(UTF_8)));
      challengeRealm.set(refusing.url("/token"));
      UpstreamException e = failure(upstream(FAST.withCredential(ALICE),
          List.of(AllowedHost.parse(authority(refusing)))), "/v2/team/app/manifests/v9");
      assertEquals(1.0, tokenFetches("401"));
      messages.add(e.getMessage());
      assertEquals(ALICE.authorization(), refusing.last().header("Authorization"));
    } finally {
      root.detachAppender(appender);
      upstreamLog.setLevel(level);
    }
    String basic64 = ALICE.authorization().substring("Basic ".length());
    assertFalse(logged.isEmpty());
    assertTrue(logged.stream().anyMatch(l -> l.contains("registry token")), logged.toString());
    for (String line : concat(logged, messages)) {
      assertFalse(line.contains("secret") || line.contains(basic64) || line.contains("pass-w0rd"), line);
    }
  }

  private static List<String> concat(List<String> a, List<String> b) {
    List<String> out = new ArrayList<>(a);
    out.addAll(b);
    return out;
  }
}
