package dev.corral.it;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real podman against a node with {@code --tokens-file} (issue 15 with issue 12's client
 * authentication, as docs/clients.md says it works): without a login a pull through the mirror is
 * refused; {@code podman login} with the token as the password passes the version check and the
 * pull succeeds; a token limited to another repository logs in (the version check reads no
 * repository) but cannot pull; a wrong token cannot log in; an anonymous repository needs none.
 * The token is never in the node's output.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OciClientAuthIT {
  static final String REPO = "corral/demo";
  static final String UPSTREAM = OciToolsIT.UPSTREAM;

  private final String token = "oci-" + UUID.randomUUID();
  private final String otherToken = "other-" + UUID.randomUUID();
  private Path dir;
  private OciRegistry registry;
  private OciImage image;
  private CorralProcess node;
  private String corral;

  @BeforeAll
  void start(@TempDir Path tmp) throws Exception {
    dir = tmp;
    registry = OciRegistry.start(dir.resolve("registry"));
    image = OciImage.builder().layer(3000, 2000).layer(40 * 1024).tag("v1").write(dir.resolve("layout"));
    Skopeo.create(dir.resolve("skopeo")).push(image, registry.hostPort() + "/" + REPO);
    Path tokens = Files.writeString(dir.resolve("tokens"), "ci " + ClientCommand.sha256(token.getBytes(UTF_8))
        + " images\nother " + ClientCommand.sha256(otherToken.getBytes(UTF_8)) + " elsewhere\n");
    node = CorralProcess.serve("oci-auth", List.of(), dir.resolve("data"),
        List.of("--tokens-file", tokens.toString(), "--anonymous-repos", "open"),
        "images=oci:" + registry.base(), "open=oci:" + registry.base(), "elsewhere=oci:" + registry.base());
    corral = node.awaitListening(Duration.ofSeconds(60)).replaceFirst("^http://", "");
  }

  @AfterAll
  void stop() throws Exception {
    if (node != null) {
      node.close();
    }
    if (registry != null) {
      registry.close();
    }
  }

  private Podman podman(String name, String repo) throws Exception {
    return Podman.create(dir.resolve(name)).mirror(UPSTREAM, corral + "/" + repo);
  }

  private ClientCommand.Result login(Podman podman, String password) throws Exception {
    return podman.run(List.of("login", "--tls-verify=false", "--username", "ci", "--password", password, corral));
  }

  @Test
  void aLoggedInPodmanPullsAndAStrangerDoesNot() throws Exception {
    try (Podman stranger = podman("stranger", "images")) {
      assertNotEquals(0, stranger.pull(UPSTREAM + "/" + REPO + ":v1").exit(), "a pull without a login");
    }
    try (Podman ci = podman("ci", "images")) {
      login(ci, token).ok();
      ci.pull(UPSTREAM + "/" + REPO + ":v1").ok();
      ci.assertHolds(image, UPSTREAM + "/" + REPO + ":v1", image.manifest().digest());
    }
    try (Podman wrong = podman("wrong", "images")) {
      assertNotEquals(0, login(wrong, "not-" + token).exit(), "a login with a wrong token");
    }
    try (Podman limited = podman("limited", "images")) {
      login(limited, otherToken).ok(); // any valid token passes the version check
      assertNotEquals(0, limited.pull(UPSTREAM + "/" + REPO + ":v1").exit(), "a token for another repository");
    }
    try (Podman anonymous = podman("anonymous", "open")) {
      anonymous.pull(UPSTREAM + "/" + REPO + ":v1").ok();
    }
    String output = node.output();
    assertFalse(output.contains(token) || output.contains(otherToken), "a token in the node's output");
    assertTrue(output.contains("status=200 cache=MISS") && output.contains("who=ci"),
        "the access log names the credential, never the token");
  }
}
