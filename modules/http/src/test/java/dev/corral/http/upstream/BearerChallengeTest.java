package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class BearerChallengeTest {

  @Test
  void readsRealmServiceAndScopeInAnyOrderAndSpelling() {
    BearerChallenge c = BearerChallenge.in(List.of(
        "Bearer realm=\"https://auth.upstream.example/token\",service=\"registry.upstream.example\","
            + "scope=\"repository:library/alpine:pull\"")).orElseThrow();
    assertEquals(URI.create("https://auth.upstream.example/token"), c.realm());
    assertEquals(Optional.of("registry.upstream.example"), c.service());
    assertEquals(List.of("repository:library/alpine:pull"), c.scopes());

    BearerChallenge spaced = BearerChallenge.in(List.of(
        "bearer  scope=\"repository:a:pull repository:b:pull\" , Service=svc, REALM=\"https://auth.upstream.example/t\""))
        .orElseThrow();
    assertEquals(List.of("repository:a:pull", "repository:b:pull"), spaced.scopes());
    assertEquals(Optional.of("svc"), spaced.service());
    assertEquals(URI.create("https://auth.upstream.example/t"), spaced.realm());
  }

  @Test
  void findsTheBearerChallengeAmongOthers() {
    BearerChallenge c = BearerChallenge.in(List.of("Basic realm=\"a, b\"",
        "Negotiate abc==, Bearer realm=\"https://auth.upstream.example/token\",error=\"insufficient_scope\""))
        .orElseThrow();
    assertEquals(URI.create("https://auth.upstream.example/token"), c.realm());
    assertEquals(Optional.empty(), c.service());
    assertEquals(List.of(), c.scopes());
    // Quoted commas and escapes do not end a parameter.
    assertEquals(Optional.of("a,\"b"), BearerChallenge.in(List.of(
        "Bearer realm=\"https://auth.upstream.example/\",service=\"a,\\\"b\"")).orElseThrow().service());
  }

  @Test
  void aChallengeWithoutAUsableRealmIsNone() {
    assertTrue(BearerChallenge.in(List.of("Basic realm=\"registry\"")).isEmpty());
    assertTrue(BearerChallenge.in(List.of("Bearer service=\"x\"")).isEmpty());
    assertTrue(BearerChallenge.in(List.of("Bearer realm=\"registry\"")).isEmpty());
    assertTrue(BearerChallenge.in(List.of("Bearer realm=\"ftp://auth.upstream.example/\"")).isEmpty());
    assertTrue(BearerChallenge.in(List.of("Bearer realm=\"https://user:pw@auth.upstream.example/\"")).isEmpty());
    assertTrue(BearerChallenge.in(List.of()).isEmpty());
    assertTrue(BearerChallenge.in(List.of("")).isEmpty());
  }

  @Test
  void theTokenUrlCarriesServiceAndEachScope() {
    BearerChallenge c = new BearerChallenge(URI.create("https://auth.upstream.example/token?client=corral"),
        Optional.of("registry.upstream.example"), List.of("repository:a/b:pull", "repository:c:pull"));
    assertEquals(URI.create("https://auth.upstream.example/token?client=corral&service=registry.upstream.example"
        + "&scope=repository%3Aa%2Fb%3Apull&scope=repository%3Ac%3Apull"), c.tokenUrl());
    assertEquals(URI.create("https://auth.upstream.example/token"),
        new BearerChallenge(URI.create("https://auth.upstream.example/token"), Optional.empty(), List.of()).tokenUrl());
  }

  @Test
  void aRealmOnHttpIsADowngradeOnlyForAnHttpsUpstream() {
    BearerChallenge plain = new BearerChallenge(URI.create("http://auth.upstream.example/token"), Optional.empty(), List.of());
    BearerChallenge tls = new BearerChallenge(URI.create("HTTPS://auth.upstream.example/token"), Optional.empty(), List.of());
    assertTrue(plain.leavesHttps(URI.create("https://registry.upstream.example/v2/a/manifests/1")));
    assertFalse(plain.leavesHttps(URI.create("http://registry.upstream.example/v2/a/manifests/1")));
    assertFalse(tls.leavesHttps(URI.create("https://registry.upstream.example/v2/a/manifests/1")));
  }
}
