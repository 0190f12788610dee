package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The client-authentication matrix with the real clients (issue 12, item 4): ONE Corral process
 * with {@code --tokens-file} and, for each of npm, pip, Maven and go, a repository that needs a
 * token ({@code npm}, {@code pypi}, {@code m2}, {@code go}) and an anonymous one
 * ({@code *-open}, in {@code --anonymous-repos}), each in front of the fixture its client IT
 * uses. Each client is configured as docs/clients.md says and
 * <ol type="a">
 *   <li>with its token (a line limited to its own repository) installs, and the access log shows
 *       how the token came: npm's {@code Bearer} on every request including the tarball URLs
 *       Corral rewrote, pip's Basic from the index URL on the file links too, Maven's Basic only
 *       after a 401 challenge (its token holds a {@code :}), go's Basic from {@code GOPROXY}'s
 *       user information;</li>
 *   <li>without a credential fails, and the node answered 401;</li>
 *   <li>with a wrong token fails with 401;</li>
 *   <li>with another client's token (limited to another repository) fails with 403;</li>
 *   <li>against the anonymous repository installs with no credential.</li>
 * </ol>
 * For go, a {@code .netrc} holding the right token is also shown NOT to be sent over plain
 * {@code http://} (the go command adds {@code .netrc} credentials to https requests only), which
 * docs/clients.md says. No token ever appears in the node's output.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ClientAuthMatrixIT {
  private static final Duration LOG_WAIT = Duration.ofSeconds(20);
  /** {@code corral.access}'s line (see AccessLog). */
  private static final Pattern ACCESS = Pattern.compile(
      "corral\\.access - (\\S+) repo=(\\S+) path=(\\S+) status=(\\d+) cache=\\S+ bytes=\\S+ ms=\\d+ client=\\S+ who=(\\S+)");

  /** One request as the node logged it. */
  record Access(String method, String repo, String path, int status, String who) {}

  /** Each client's token and its name in the tokens file (a line limited to the client's repository). */
  record Credential(String name, String token, String repo) {}

  private final Map<String, Credential> credentials = new LinkedHashMap<>();
  private final List<FixtureRegistry> fixtures = new ArrayList<>();
  private final Map<String, String[]> goSums = new LinkedHashMap<>();
  private Map<String, PipClientIT.Project> pipProjects;
  private Path work;
  private CorralProcess node;
  private String corral;
  /** HTTPS in front of the node: the go command sends a credential over HTTPS only. */
  private TlsFront front;

  @BeforeAll
  void start(@TempDir Path dir) throws Exception {
    work = dir;
    ClientCommand.require("python3", "python3", "ClientAuthMatrixIT");
    if (!ClientCommand.onPath("pip3")) {
      ClientCommand.require("pip3", "python3-pip", "ClientAuthMatrixIT");
    }
    NpmClientIT.pack(work.resolve("packed"));
    FixtureRegistry npm = NpmClientIT.startFixture(work.resolve("npm-upstream"));
    pipProjects = PipClientIT.projects();
    FixtureRegistry pypi = PipClientIT.fixture(pipProjects, work.resolve("pip-upstream"));
    FixtureRegistry m2 = MavenClientIT.fixture(work.resolve("maven"));
    FixtureRegistry go = GoClientIT.fixture(work.resolve("go"), goSums);
    fixtures.addAll(List.of(npm, pypi, m2, go));

    credentials.put("npm", new Credential("npm-ci", "npm-" + UUID.randomUUID(), "npm"));
    credentials.put("pip", new Credential("pip-ci", "pip-" + UUID.randomUUID(), "pypi"));
    // A ':' in the token: Basic splits user and password at the first ':' only.
    credentials.put("maven", new Credential("maven-ci", "mvn:" + UUID.randomUUID() + ":x", "m2"));
    credentials.put("go", new Credential("go-ci", "go" + UUID.randomUUID().toString().replace("-", ""), "go"));
    StringBuilder lines = new StringBuilder("# NAME SHA256HEX-OF-TOKEN REPOS\n");
    for (Credential c : credentials.values()) {
      lines.append(c.name()).append(' ').append(ClientCommand.sha256(c.token().getBytes(UTF_8))).append(' ')
          .append(c.repo()).append('\n');
    }
    Path tokens = Files.writeString(work.resolve("tokens"), lines.toString());

    node = CorralProcess.serve("auth-clients", List.of("-Dlogback.configurationFile=" + quickAccessLog(work)), work.resolve("data"),
        List.of("--tokens-file", tokens.toString(), "--anonymous-repos", "npm-open,pypi-open,m2-open,go-open"),
        "npm=npm:" + npm.url() + "/", "npm-open=npm:" + npm.url() + "/",
        "pypi=pypi:" + pypi.url() + "/simple/", "pypi-open=pypi:" + pypi.url() + "/simple/",
        "m2=maven:" + m2.url() + "/", "m2-open=maven:" + m2.url() + "/",
        "go=go:" + go.url() + "/", "go-open=go:" + go.url() + "/");
    corral = node.awaitListening(Duration.ofSeconds(60));
    front = TlsFront.start(work.resolve("front"), corral);
    MavenClientIT.consumer(work.resolve("maven"), "consumer", MavenClientIT.dependency("demo-lib", "[1.0,2.0)"));
  }

  /**
   * The node's own logback.xml with the access log's buffer written every 20 ms instead of every
   * second: each {@link Log} waits for a probe's line to be written, about 20 times per test, and
   * waited half a second on average for the buffer. Derived from the file the node ships, so the
   * lines stay what production writes.
   */
  private static Path quickAccessLog(Path dir) throws Exception {
    String shipped = Files.readString(CorralProcess.repoRoot().resolve("modules/server/src/main/resources/logback.xml"));
    String access = "<appender name=\"ACCESS\" class=\"dev.corral.server.BufferedConsoleAppender\">";
    assertTrue(shipped.contains(access), "logback.xml has no ACCESS appender to speed up:\n" + shipped);
    return Files.writeString(dir.resolve("logback-quick-access.xml"),
        shipped.replace(access, access + "<flushMillis>20</flushMillis>"));
  }

  @AfterAll
  void stop() {
    if (front != null) {
      front.close();
    }
    if (node != null) {
      node.close();
    }
    fixtures.forEach(FixtureRegistry::close);
  }

  // ---- npm ----------------------------------------------------------------------------------------

  @Test
  void npm() throws Exception {
    Credential own = credentials.get("npm");
    Credential other = credentials.get("pip");

    Log log = new Log();
    ClientCommand.Result ok = npmInstall("npm", "npm-ok", Optional.of(own.token())).ok();
    NpmClientIT.assertInstalled(corral + "/npm", work.resolve("npm-ok"));
    List<Access> seen = log.await("npm", ok.output(), 200);
    assertAllFrom(seen, own.name(), ok.output());
    assertTrue(seen.stream().anyMatch(a -> a.path().endsWith(".tgz")), "the tarballs came through Corral\n" + seen);
    assertEquals(List.of(), seen.stream().filter(a -> a.status() == 401).toList(), "npm sends its Bearer token at once");

    refused(new Log(), npmInstall("npm", "npm-none", Optional.empty()), "npm", 401, "-");
    refused(new Log(), npmInstall("npm", "npm-wrong", Optional.of("npm-wrong-token")), "npm", 401, "-");
    refused(new Log(), npmInstall("npm", "npm-other", Optional.of(other.token())), "npm", 403, other.name());

    Log open = new Log();
    ClientCommand.Result anonymous = npmInstall("npm-open", "npm-open", Optional.empty()).ok();
    NpmClientIT.assertInstalled(corral + "/npm-open", work.resolve("npm-open"));
    assertAllFrom(open.await("npm-open", anonymous.output(), 200), "-", anonymous.output());
    assertTokenNeverLogged(own);
  }

  /**
   * {@code npm install @demo/scoped} with a user config holding, when given, the documented line
   * {@code //HOST:PORT/REPO/:_authToken=TOKEN}.
   */
  private ClientCommand.Result npmInstall(String repo, String project, Optional<String> token) throws Exception {
    Path dir = Files.createDirectories(work.resolve(project));
    Files.writeString(dir.resolve("package.json"), "{\"name\":\"" + project + "\",\"version\":\"1.0.0\",\"private\":true}\n");
    Path npmrc = work.resolve(project + ".npmrc");
    String registry = corral + "/" + repo + "/";
    Files.writeString(npmrc, token.map(t -> registry.substring("http:".length()) + ":_authToken=" + t + "\n").orElse(""));
    return ClientCommand.run(dir, NpmClientIT.npmEnv(), NpmClientIT.CLIENT_TIMEOUT, List.of("npm", "install",
        "@demo/scoped", "--registry", registry, "--userconfig", npmrc.toString(),
        "--cache", work.resolve(project + "-cache").toString(), "--no-audit", "--no-fund", "--no-update-notifier",
        "--fetch-retries=0", "--loglevel", "http"));
  }

  // ---- pip ----------------------------------------------------------------------------------------

  @Test
  void pip() throws Exception {
    Credential own = credentials.get("pip");
    Credential other = credentials.get("maven");

    Log log = new Log();
    ClientCommand.Result ok = pipDownload("pypi", "pip-ok", Optional.of(own.token())).ok();
    PipClientIT.assertDownloaded(pipProjects, work.resolve("pip-ok"), ok);
    List<Access> seen = log.await("pypi", ok.output(), 200);
    assertAllFrom(seen, own.name(), ok.output());
    assertTrue(seen.stream().anyMatch(a -> a.path().endsWith(".whl")), "the wheels came through Corral\n" + seen);
    assertEquals(List.of(), seen.stream().filter(a -> a.status() == 401).toList(),
        "pip sends the index URL's credentials at once, on the file links too");

    refused(new Log(), pipDownload("pypi", "pip-none", Optional.empty()), "pypi", 401, "-");
    refused(new Log(), pipDownload("pypi", "pip-wrong", Optional.of("pip-wrong-token")), "pypi", 401, "-");
    refused(new Log(), pipDownload("pypi", "pip-other", Optional.of(other.token())), "pypi", 403, other.name());

    Log open = new Log();
    ClientCommand.Result anonymous = pipDownload("pypi-open", "pip-open", Optional.empty()).ok();
    PipClientIT.assertDownloaded(pipProjects, work.resolve("pip-open"), anonymous);
    assertAllFrom(open.await("pypi-open", anonymous.output(), 200), "-", anonymous.output());
    assertTokenNeverLogged(own);
  }

  /** {@code pip download demo-pkg==1.0.0} with {@code --index-url http://token:TOKEN@HOST:PORT/REPO/} when given. */
  private ClientCommand.Result pipDownload(String repo, String run, Optional<String> token) throws Exception {
    Path dir = Files.createDirectories(work.resolve(run));
    String index = token.map(t -> corral.replace("http://", "http://token:" + java.net.URLEncoder.encode(t, UTF_8) + "@"))
        .orElse(corral) + "/" + repo + "/";
    return ClientCommand.run(dir, Map.of("PIP_CONFIG_FILE", "/dev/null"), PipClientIT.CLIENT_TIMEOUT, List.of(
        "python3", "-m", "pip", "--isolated", "--disable-pip-version-check", "--no-input", "-vv", "download",
        "--cache-dir", dir.resolve("cache").toString(), "--retries", "0", "--timeout", "60",
        "--index-url", index, "-d", dir.resolve("out").toString(), "demo-pkg==1.0.0"));
  }

  // ---- Maven --------------------------------------------------------------------------------------

  @Test
  void maven() throws Exception {
    Credential own = credentials.get("maven");
    Credential other = credentials.get("go");

    Log log = new Log();
    ClientRun ok = mvn("ok", "m2", Optional.of(own.token()));
    assertEquals(0, ok.exitCode(), ok.describe() + node.output());
    assertTrue(ok.output().contains("BUILD SUCCESS"), ok.describe());
    assertTrue(Files.isRegularFile(work.resolve("maven/local-ok/com/example/demo-base/1.0.0/demo-base-1.0.0.jar")));
    List<Access> seen = log.await("m2", ok.output(), 200);
    assertTrue(seen.stream().anyMatch(a -> a.status() == 401 && a.who().equals("-")),
        "Maven sends its password only after a 401 challenge\n" + seen);
    assertAllFrom(seen.stream().filter(a -> a.status() != 401).toList(), own.name(), ok.output());

    refusedMaven(new Log(), mvn("none", "m2", Optional.empty()), 401, "-");
    refusedMaven(new Log(), mvn("wrong", "m2", Optional.of("mvn-wrong-token")), 401, "-");
    refusedMaven(new Log(), mvn("other", "m2", Optional.of(other.token())), 403, other.name());

    Log open = new Log();
    ClientRun anonymous = mvn("open", "m2-open", Optional.empty());
    assertEquals(0, anonymous.exitCode(), anonymous.describe() + node.output());
    assertAllFrom(open.await("m2-open", anonymous.output(), 200), "-", anonymous.output());
    assertTokenNeverLogged(own);
  }

  /**
   * {@code mvn -C compile} of the consumer with a fresh local repository and a settings.xml whose
   * mirror (id {@code corral}) points at {@code repo} and, with a token, a {@code <server>} of the
   * same id holding it as the password.
   */
  private ClientRun mvn(String run, String repo, Optional<String> token) throws Exception {
    Path dir = work.resolve("maven");
    Path settings = dir.resolve("settings-" + run + ".xml");
    String server = token.map(t -> "<servers><server><id>corral</id><username>token</username><password>" + t
        + "</password></server></servers>").orElse("");
    Files.writeString(settings, """
        <settings>
          <mirrors><mirror><id>corral</id><mirrorOf>*</mirrorOf><url>%s/%s/</url></mirror></mirrors>
          %s
        </settings>
        """.formatted(corral, repo, server));
    return ClientRun.run(dir.resolve("consumer"), MavenClientIT.MAVEN_ENV, MavenClientIT.CLIENT_TIMEOUT, List.of(
        "mvn", "-B", "-ntp", "-C", "-Dstyle.color=never", "-s", settings.toString(),
        "-Dmaven.repo.local=" + dir.resolve("local-" + run), "compile"));
  }

  private void refusedMaven(Log log, ClientRun r, int status, String who) throws Exception {
    assertNotEquals(0, r.exitCode(), r.describe());
    assertTrue(r.output().contains(String.valueOf(status)), r.describe());
    List<Access> seen = log.await("m2", r.output(), status);
    assertEquals(List.of(), seen.stream().filter(a -> a.status() < 400).toList(), "nothing served\n" + r.describe());
    assertTrue(seen.stream().anyMatch(a -> a.status() == status && a.who().equals(who)), seen + "\n" + r.describe());
  }

  // ---- go -----------------------------------------------------------------------------------------

  @Test
  void go() throws Exception {
    Credential own = credentials.get("go");
    Credential other = credentials.get("npm");
    String https = front.url() + "/go";

    Log log = new Log();
    ClientRun ok = goDownload("go-ok", https, Optional.of(own.token()));
    assertEquals(0, ok.exitCode(), ok.describe() + node.output());
    GoClientIT.assertSums(goSums, ok);
    List<Access> seen = log.await("go", ok.output(), 200);
    assertAllFrom(seen, own.name(), ok.output());
    assertTrue(seen.stream().anyMatch(a -> a.path().endsWith(".zip")), seen.toString());
    assertEquals(List.of(), seen.stream().filter(a -> a.status() == 401).toList(), "go sends the .netrc password at once");

    // Over plain http the go command sends no credential at all: not the .netrc's ...
    refusedGo(new Log(), goDownload("go-http-netrc", corral + "/go", Optional.of(own.token())), 401, "-");
    // ... and not GOPROXY's user information, which it refuses before asking.
    Log none = new Log();
    ClientRun userinfo = GoClientIT.download(corral.replace("http://", "http://token:" + own.token() + "@") + "/go",
        work.resolve("go-http-userinfo"), GoClientIT.MODULES);
    assertNotEquals(0, userinfo.exitCode(), userinfo.describe());
    assertTrue(userinfo.output().contains("refusing to pass credentials to insecure URL"), userinfo.describe());
    assertEquals(List.of(), none.lines("go"), "nothing was asked");

    refusedGo(new Log(), goDownload("go-none", https, Optional.empty()), 401, "-");
    refusedGo(new Log(), goDownload("go-wrong", https, Optional.of("gowrongtoken")), 401, "-");
    refusedGo(new Log(), goDownload("go-other", https, Optional.of(other.token())), 403, other.name());

    Log open = new Log();
    ClientRun anonymous = goDownload("go-open", corral + "/go-open", Optional.empty());
    assertEquals(0, anonymous.exitCode(), anonymous.describe() + node.output());
    GoClientIT.assertSums(goSums, anonymous);
    assertAllFrom(open.await("go-open", anonymous.output(), 200), "-", anonymous.output());
    assertTokenNeverLogged(own);
  }

  /**
   * {@code go mod download} with {@code GOPROXY=goproxy} and, when given, the documented
   * {@code .netrc} in the client's home: {@code machine 127.0.0.1 login token password TOKEN}
   * (the host without the port). The HTTPS front's certificate is trusted through
   * {@code SSL_CERT_FILE}.
   */
  private ClientRun goDownload(String run, String goproxy, Optional<String> token) throws Exception {
    Path home = Files.createDirectories(work.resolve(run));
    if (token.isPresent()) {
      Files.writeString(home.resolve(".netrc"), "machine 127.0.0.1 login token password " + token.get() + "\n");
    }
    return GoClientIT.download(goproxy, home, GoClientIT.MODULES,
        Map.of("SSL_CERT_FILE", front.certificate().toString()));
  }

  private void refusedGo(Log log, ClientRun r, int status, String who) throws Exception {
    assertNotEquals(0, r.exitCode(), r.describe());
    assertTrue(r.output().contains(status + (status == 401 ? " Unauthorized" : " Forbidden")), r.describe());
    List<Access> seen = log.await("go", r.output(), status);
    assertEquals(List.of(), seen.stream().filter(a -> a.status() < 400).toList(), "nothing served\n" + r.describe());
    assertTrue(seen.stream().allMatch(a -> a.status() == status && a.who().equals(who)), seen + "\n" + r.describe());
  }

  // ---- the node's answers -------------------------------------------------------------------------

  /** A client run that must fail, the node having answered {@code status} to each of its requests. */
  private void refused(Log log, ClientCommand.Result r, String repo, int status, String who) throws Exception {
    assertNotEquals(0, r.exit(), "the client must fail\n" + String.join(" ", r.command()) + "\n" + r.output());
    List<Access> seen = log.await(repo, r.output(), status);
    assertTrue(seen.stream().allMatch(a -> a.status() == status && a.who().equals(who)),
        "every request answered " + status + " (who=" + who + ")\n" + seen + "\n" + r.output());
  }

  /** Every request succeeded (2xx or 304) and was made with credential {@code who} ({@code -}: none). */
  private static void assertAllFrom(List<Access> seen, String who, String output) {
    assertFalse(seen.isEmpty(), output);
    for (Access a : seen) {
      assertTrue((a.status() >= 200 && a.status() < 300) || a.status() == 304, a + "\n" + seen + "\n" + output);
      assertEquals(who, a.who(), a + "\n" + output);
    }
  }

  private void assertTokenNeverLogged(Credential c) {
    String out = node.stdout() + node.stderr();
    assertFalse(out.contains(c.token()), "the node's output holds " + c.name() + "'s token");
    assertTrue(out.contains("who=" + c.name()), "the access log names the credential");
  }

  /**
   * The node's access-log lines written from its creation on (made before the client runs). The
   * access log reaches standard output through a buffer written at least once a second
   * (BufferedConsoleAppender; every 20 ms here, see {@link #quickAccessLog}), so each read first
   * asks the node for a probe path and waits for its line: lines are written in order, so every
   * earlier line is out by then.
   */
  private final class Log {
    private final int from;

    Log() throws Exception {
      from = flushed();
    }

    /** The lines for {@code repo}, once one with {@code status} is there (the log is written by another process). */
    List<Access> await(String repo, String clientOutput, int status) throws Exception {
      Await.until(LOG_WAIT, () -> "no access line for " + repo + " with status " + status + "\n" + clientOutput
          + "\n" + node.output(), () -> {
            flushed();
            return lines(repo).stream().anyMatch(a -> a.status() == status);
          });
      return lines(repo);
    }

    /** Asks for a probe path and waits until its access line is out; the output's length after it. */
    private int flushed() throws Exception {
      String probe = "/log-probe-" + java.util.UUID.randomUUID();
      Http.getBytes(corral + probe);
      Await.until(LOG_WAIT, () -> "no access line for " + probe + "\n" + node.output(),
          () -> node.stdout().contains("path=" + probe + " "));
      String out = node.stdout();
      int line = out.indexOf('\n', out.indexOf("path=" + probe + " "));
      return line < 0 ? out.length() : line + 1;
    }

    List<Access> lines(String repo) {
      List<Access> out = new ArrayList<>();
      Matcher m = ACCESS.matcher(node.stdout().substring(from));
      while (m.find()) {
        if (m.group(2).equals(repo)) {
          out.add(new Access(m.group(1), m.group(2), m.group(3), Integer.parseInt(m.group(4)), m.group(5)));
        }
      }
      return out;
    }
  }
}
