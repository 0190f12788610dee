package dev.corral.registry.generic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.core.upstream.Lifetime;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Target;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class FreshnessRulesTest {
  private static final Lifetime FIVE_MINUTES = Lifetime.fixed(Duration.ofMinutes(5));
  private final FreshnessRules rules = new FreshnessRules(List.of(
      new FreshnessRules.Rule("dists/*/Release", Lifetime.fixed(Duration.ofSeconds(30))),
      new FreshnessRules.Rule("dists/**", FIVE_MINUTES),
      new FreshnessRules.Rule("pool/**", Lifetime.IMMUTABLE),
      new FreshnessRules.Rule("*.iso", Lifetime.IMMUTABLE),
      new FreshnessRules.Rule("v?/index.json", Lifetime.fixed(Duration.ZERO))));

  @Test
  void theFirstMatchingRuleDecides() {
    assertEquals(Lifetime.fixed(Duration.ofSeconds(30)), rules.lifetimeOf("dists/stable/Release"));
    assertEquals(FIVE_MINUTES, rules.lifetimeOf("dists/stable/main/binary-amd64/Packages.gz"));
    assertEquals(FIVE_MINUTES, rules.lifetimeOf("dists/stable/Release.gpg"));
    assertEquals(Lifetime.IMMUTABLE, rules.lifetimeOf("pool/main/c/curl/curl_8.5.0_amd64.deb"));
    assertEquals(Lifetime.fixed(Duration.ZERO), rules.lifetimeOf("v1/index.json"));
  }

  @Test
  void aPathNoRuleMatchesFollowsTheUpstream() {
    assertEquals(Lifetime.UPSTREAM, rules.lifetimeOf("README"));
    assertEquals(Lifetime.UPSTREAM, rules.lifetimeOf("dists"), "dists/** needs something after dists/");
    assertEquals(Lifetime.UPSTREAM, rules.lifetimeOf("images/x.iso"), "* stays within one segment");
    assertEquals(Lifetime.UPSTREAM, rules.lifetimeOf("v12/index.json"), "? is one character");
    assertEquals(Lifetime.UPSTREAM, rules.lifetimeOf("xpool/a"));
    assertEquals(Lifetime.UPSTREAM, FreshnessRules.NONE.lifetimeOf("pool/a"));
  }

  @Test
  void otherCharactersStandForThemselves() {
    FreshnessRules dots = new FreshnessRules(List.of(new FreshnessRules.Rule("a.b+(c)$", Lifetime.IMMUTABLE)));
    assertEquals(Lifetime.IMMUTABLE, dots.lifetimeOf("a.b+(c)$"));
    assertEquals(Lifetime.UPSTREAM, dots.lifetimeOf("axb+(c)$"));
  }

  @Test
  void badPatternsAreRefusedWithTheirReason() {
    for (String bad : List.of("", " ", "/dists/**", "a/***", "pool/[ab]", "{a,b}", "a\\b", "a\u0001b")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> new FreshnessRules.Rule(bad, Lifetime.IMMUTABLE), bad);
      assertTrue(e.getMessage().contains("pattern"), e.getMessage());
    }
    assertThrows(IllegalArgumentException.class, () -> new FreshnessRules.Rule("a", Lifetime.UPSTREAM));
  }

  @Test
  void theGenericRepositoryGivesEachPathItsLifetime() throws Exception {
    GenericRepository repo = new GenericRepository("deb", "http://upstream.example/debian", QueryPolicy.keep(), rules);
    assertEquals(Lifetime.IMMUTABLE, lifetime(repo, "pool", "main", "a.deb"));
    assertEquals(FIVE_MINUTES, lifetime(repo, "dists", "stable", "InRelease"));
    assertEquals(Lifetime.UPSTREAM, lifetime(repo, "README"));
    assertEquals(Lifetime.UPSTREAM, lifetime(new GenericRepository("g", "http://upstream.example"), "pool", "a"));
  }

  private static Lifetime lifetime(GenericRepository repo, String... segments) throws Exception {
    RepoRequest request = new RepoRequest(List.of(segments), "/" + String.join("/", segments), Optional.empty(),
        Optional.empty(), "http://cache.example/" + repo.name());
    Target t = repo.resolve(request, null).toCompletableFuture().get();
    Target.Artifact a = (Target.Artifact) t;
    assertEquals(false, a.mutable(), "a generic file is never compressible metadata");
    return a.lifetime();
  }
}
