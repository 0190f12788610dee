package dev.corral.http.upstream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.http.upstream.UpstreamScope.Admission;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The scope's decisions on URLs and on already-resolved addresses. Address inputs are literals
 * given to the check (no lookup, no connection); only loopback-form hosts appear as URLs.
 */
class UpstreamScopeTest {
  private static final UpstreamScope NPM = UpstreamScope.of("http://127.0.0.1:4873/npm");

  private static Admission admit(UpstreamScope scope, String url) {
    return scope.admit(URI.create(url));
  }

  private static void refused(UpstreamScope scope, String url) {
    UpstreamScope.Refused e = assertThrows(UpstreamScope.Refused.class, () -> admit(scope, url), url);
    assertTrue(e.getMessage().startsWith("upstream request refused by policy"), e.getMessage());
    assertFalse(e.getMessage().contains("127.0.0.1") || e.getMessage().contains("?"), e.getMessage());
  }

  @Test
  void theBaseGetsTheCredentialAndOtherOriginsAreRefusedInEverySpelling() {
    assertEquals(Admission.WITH_CREDENTIAL, admit(NPM, "http://127.0.0.1:4873/npm/left-pad"));
    assertEquals(Admission.WITH_CREDENTIAL, admit(NPM, "http://127.0.0.1:4873/npm/@s%2Fp"));
    assertEquals(Admission.WITH_CREDENTIAL, admit(NPM, "http://[::ffff:127.0.0.1]:4873/npm/x"));
    refused(NPM, "http://127.0.0.1:4874/npm/left-pad");
    refused(NPM, "https://127.0.0.1:4873/npm/left-pad");
    refused(NPM, "http://2130706433:4874/npm/x");
    refused(NPM, "http://2130706433:4873/npm/x");
    refused(NPM, "http://[::ffff:127.0.0.1]:4874/npm/x");
    refused(NPM, "http://localhost:4873/npm/x");
    refused(NPM, "http://127.1:4873/npm/x");
    refused(NPM, "ftp://127.0.0.1:4873/npm/x");
  }

  @Test
  void thePathMayNotLeaveTheBaseInAnySpelling() {
    assertEquals(Admission.WITH_CREDENTIAL, admit(NPM, "http://127.0.0.1:4873/npm"));
    refused(NPM, "http://127.0.0.1:4873/npmx");
    refused(NPM, "http://127.0.0.1:4873/other/x");
    refused(NPM, "http://127.0.0.1:4873/npm/../other/x");
    refused(NPM, "http://127.0.0.1:4873/npm/%2e%2e/other/x");
    refused(NPM, "http://127.0.0.1:4873/npm/%2E%2E%2Fother");
    refused(NPM, "http://127.0.0.1:4873/npm/..%5cother");
    refused(NPM, "http://127.0.0.1:4873/../../npm/x");
    assertEquals(Admission.WITH_CREDENTIAL, admit(NPM, "http://127.0.0.1:4873/npm/a/../b"));
    assertEquals(Optional.empty(), UpstreamScope.resolvedPath("/a/../.."));
    assertEquals(Optional.of("/b/"), UpstreamScope.resolvedPath("/a/../b/."));
  }

  @Test
  void aPypiScopeSpansTheIndexsParentAndAFurtherBaseGetsNoCredential() {
    UpstreamScope pypi = UpstreamScope.of("http://127.0.0.1:3141/pypi/simple/").under("/pypi/")
        .alsoUnder("http://127.0.0.1:3142/sumdb");
    assertEquals(Admission.WITH_CREDENTIAL, admit(pypi, "http://127.0.0.1:3141/pypi/packages/a.whl"));
    refused(pypi, "http://127.0.0.1:3141/pypi/simple/p/../../../x.whl");
    assertEquals(Admission.WITHOUT_CREDENTIAL, admit(pypi, "http://127.0.0.1:3142/sumdb/lookup/x"));
    refused(pypi, "http://127.0.0.1:3142/elsewhere");
    assertThrows(IllegalArgumentException.class, () -> UpstreamScope.of("http://127.0.0.1:1/a/").under("/b/"));
  }

  @Test
  void listedHostsAreAllowedWithoutTheCredential() {
    UpstreamScope scope = NPM.allowing(List.of(AllowedHost.parse("127.0.0.1:4874"), AllowedHost.parse("files.upstream.example")));
    assertEquals(Admission.WITHOUT_CREDENTIAL, admit(scope, "http://127.0.0.1:4874/anything?sig=1"));
    assertEquals(Admission.WITHOUT_CREDENTIAL, admit(scope, "http://[::ffff:127.0.0.1]:4874/x"));
    assertEquals(Admission.WITHOUT_CREDENTIAL, admit(scope, "https://files.upstream.example/t.tgz"));
    refused(scope, "https://files.upstream.example:8443/t.tgz");
    refused(scope, "http://2130706433:4874/x");
    refused(scope, "http://127.0.0.1:4873/outside");
    UpstreamScope ownHostListed = NPM.allowing(List.of(AllowedHost.parse("127.0.0.1:4873")));
    assertEquals(Admission.WITHOUT_CREDENTIAL, admit(ownHostListed, "http://127.0.0.1:4873/outside"));
  }

  @Test
  void theConfiguredHostMayBeInternalAndAListedNameMayNotResolveToAnInternalAddress() {
    UpstreamScope scope = UpstreamScope.of("http://registry.internal.example:4873/")
        .allowing(List.of(AllowedHost.parse("files.upstream.example"), AllowedHost.parse("10.0.0.7:8080")));
    InetAddress metadata = InternalAddresses.literal("169.254.169.254");
    InetAddress lan = InternalAddresses.literal("10.0.0.7");
    InetAddress mapped = InternalAddresses.literal("::ffff:127.0.0.1");
    InetAddress publicAddress = InternalAddresses.literal("203.0.113.10");
    UpstreamScope.OwnAddresses own = hosts -> Set.of(lan);

    assertEquals(new InetSocketAddress(lan, 4873),
        scope.connectable("registry.internal.example", 4873, new InetAddress[] {lan}, own));
    assertEquals(new InetSocketAddress(publicAddress, 443),
        scope.connectable("files.upstream.example", 443, new InetAddress[] {publicAddress}, own));
    for (InetAddress internal : List.of(metadata, mapped, InternalAddresses.literal("fd00:ec2::254"))) {
      assertThrows(UpstreamScope.Refused.class,
          () -> scope.connectable("files.upstream.example", 443, new InetAddress[] {internal}, own), internal.toString());
    }
    assertThrows(UpstreamScope.Refused.class, () -> scope.connectable("files.upstream.example", 443,
        new InetAddress[] {publicAddress, metadata}, own));
    // The configured upstream's own address is allowed behind a listed name, and a listed IP literal.
    assertEquals(new InetSocketAddress(lan, 443),
        scope.connectable("files.upstream.example", 443, new InetAddress[] {lan}, own));
    assertEquals(new InetSocketAddress(lan, 8080), scope.connectable("10.0.0.7", 8080, new InetAddress[] {lan}, own));
    // A host outside the scope is refused at the connection too.
    assertThrows(UpstreamScope.Refused.class,
        () -> scope.connectable("other.upstream.example", 443, new InetAddress[] {publicAddress}, own));
    assertThrows(UpstreamScope.Refused.class, () -> scope.connectable("10.0.0.7", 9090, new InetAddress[] {lan}, own));
    assertThrows(UpstreamScope.Refused.class, () -> scope.connectable("files.upstream.example", 443, new InetAddress[0], own));
  }

  @Test
  void aTokenRealmGetsTheCredentialInsideTheBaseOrOnAListedHostOnly() {
    UpstreamScope oci = UpstreamScope.of("https://registry.upstream.example/")
        .alsoUnder("https://sum.upstream.example/")
        .allowing(List.of(AllowedHost.parse("auth.upstream.example")));
    assertEquals(Admission.WITH_CREDENTIAL, oci.admitRealm(URI.create("https://registry.upstream.example/token")));
    assertEquals(Admission.WITH_CREDENTIAL, oci.admitRealm(URI.create("https://auth.upstream.example/token")));
    // Listed for redirects only as plain admit: there, never with the credential.
    assertEquals(Admission.WITHOUT_CREDENTIAL, oci.admit(URI.create("https://auth.upstream.example/token")));
    assertEquals(Admission.WITHOUT_CREDENTIAL, oci.admitRealm(URI.create("https://sum.upstream.example/token")));
    assertThrows(UpstreamScope.Refused.class, () -> oci.admitRealm(URI.create("https://evil.upstream.example/token")));
    assertThrows(UpstreamScope.Refused.class, () -> oci.admitRealm(URI.create("https://auth.upstream.example:8443/token")));
  }
}
