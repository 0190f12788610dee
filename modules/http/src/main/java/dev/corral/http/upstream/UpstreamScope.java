package dev.corral.http.upstream;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Where one repository's upstream requests may go: its own bases (the configured upstream URL's
 * origin and path, and any further configured URL such as a Go checksum database) and the hosts
 * of its {@code allowed-hosts} list. {@link HttpUpstream} consults it for every request and every
 * redirect hop ({@link #admit}) and again when it connects ({@link #connectable}), so a URL from
 * anywhere (an upstream's redirect, a packument, an index page, a cluster peer's message) never
 * widens it.
 *
 * <p>Rules, in order:
 * <ol>
 *   <li>Only http and https URLs with a host.
 *   <li>On a base's origin (scheme, host, port), the path must stay under the base's path after
 *       {@code .}/{@code ..} and their percent-encoded forms are resolved; the repository's
 *       credential goes only to the first base, within its path.
 *   <li>Any other origin, or the base's origin outside its path, must match an {@code
 *       allowed-hosts} entry ({@link AllowedHost}); such requests never carry the credential.
 *   <li>When connecting, the host is resolved once and the connection goes to that address. An
 *       address in {@link InternalAddresses} is refused unless the host is a base's host (the
 *       operator configured it), the address is one a base's host resolves to, or the matching
 *       entry is that very IP literal.
 * </ol>
 *
 * <p>A refusal's message names neither the URL nor any address: it is shown to clients.
 */
public final class UpstreamScope {
  /** The answer for an admitted URL: whether the repository's credential may go with it. */
  public enum Admission {
    /** Inside the first base: the credential, if any, is sent. */
    WITH_CREDENTIAL,
    /** Allowed, never with the credential. */
    WITHOUT_CREDENTIAL
  }

  /** A request outside the scope; the message is safe to show (no URL, no address). */
  public static final class Refused extends RuntimeException {
    Refused(String message) {
      super(message, null, false, false);
    }
  }

  /** An origin and the path under which requests stay (ends with '/'). */
  record Base(HttpUpstream.Origin origin, String path) {}

  private static final Pattern ENCODED_DOT = Pattern.compile("%2[eE]");
  private static final Pattern ENCODED_SLASH = Pattern.compile("%2[fF]|%5[cC]|\\\\");

  private final List<Base> bases;
  private final List<AllowedHost> allowed;

  private UpstreamScope(List<Base> bases, List<AllowedHost> allowed) {
    this.bases = List.copyOf(bases);
    this.allowed = List.copyOf(allowed);
  }

  /**
   * The scope of one base URL: its origin, under its path taken as a directory ({@code /npm} and
   * {@code /npm/} both admit {@code /npm/...}; the base URL itself is admitted too).
   */
  public static UpstreamScope of(String baseUrl) {
    URI base = URI.create(baseUrl);
    return new UpstreamScope(List.of(new Base(HttpUpstream.Origin.of(base), directory(base.getRawPath()))), List.of());
  }

  /**
   * The same scope with the first base's path widened to {@code path} (which must contain it), for
   * types whose files live beside the configured URL (a PyPI index's files).
   */
  public UpstreamScope under(String path) {
    String dir = directory(path);
    List<Base> out = new ArrayList<>(bases);
    Base first = out.get(0);
    if (!first.path().startsWith(dir)) {
      throw new IllegalArgumentException(first.path() + " is not under " + dir);
    }
    out.set(0, new Base(first.origin(), dir));
    return new UpstreamScope(out, allowed);
  }

  /** The same scope with another configured URL's base (no credential goes there). */
  public UpstreamScope alsoUnder(String url) {
    URI u = URI.create(url);
    List<Base> out = new ArrayList<>(bases);
    out.add(new Base(HttpUpstream.Origin.of(u), directory(u.getRawPath())));
    return new UpstreamScope(out, allowed);
  }

  /** The same scope with these {@code allowed-hosts} entries. */
  public UpstreamScope allowing(List<AllowedHost> hosts) {
    return new UpstreamScope(bases, hosts);
  }

  public List<AllowedHost> allowedHosts() {
    return allowed;
  }

  /** Whether {@code url} may be requested, and with the credential or not; else {@link Refused}. */
  public Admission admit(URI url) {
    String scheme = url.getScheme() == null ? "" : url.getScheme().toLowerCase(Locale.ROOT);
    if (!(scheme.equals("http") || scheme.equals("https")) || url.getHost() == null) {
      throw new Refused("upstream request refused by policy: not an http(s) URL with a host");
    }
    HttpUpstream.Origin origin = HttpUpstream.Origin.of(url);
    String host = IpLiteral.canonical(url.getHost());
    Optional<String> path = resolvedPath(url.getRawPath());
    boolean ownOrigin = false;
    for (int i = 0; i < bases.size(); i++) {
      Base base = bases.get(i);
      if (sameOrigin(base.origin(), origin)) {
        ownOrigin = true;
        if (path.isPresent() && (path.get().startsWith(base.path()) || (path.get() + "/").equals(base.path()))) {
          return i == 0 ? Admission.WITH_CREDENTIAL : Admission.WITHOUT_CREDENTIAL;
        }
      }
    }
    for (AllowedHost entry : allowed) {
      if (entry.matches(scheme, host, origin.port())) {
        return Admission.WITHOUT_CREDENTIAL;
      }
    }
    throw new Refused(ownOrigin
        ? "upstream request refused by policy: the path leaves the repository's base path"
        : "upstream request refused by policy: the host is neither the repository's upstream nor on its allowed-hosts");
  }

  /**
   * Whether a registry token realm may be asked, and with the credential; else {@link Refused}.
   * The realm comes from a {@code Bearer} challenge of the repository's own upstream (its first
   * base: {@link HttpUpstream} honours no other challenge), so it is admitted as any URL is, and
   * the credential goes with it when the realm is inside the first base or on an {@code
   * allowed-hosts} entry: listing a realm's host is the operator's consent that it receives the
   * credential. A realm on a further base (a checksum database) gets none.
   */
  public Admission admitRealm(URI realm) {
    Admission admission = admit(realm);
    if (admission == Admission.WITH_CREDENTIAL) {
      return admission;
    }
    HttpUpstream.Origin origin = HttpUpstream.Origin.of(realm);
    String host = IpLiteral.canonical(realm.getHost());
    for (AllowedHost entry : allowed) {
      if (entry.matches(origin.scheme(), host, origin.port())) {
        return Admission.WITH_CREDENTIAL;
      }
    }
    return Admission.WITHOUT_CREDENTIAL;
  }

  /**
   * The address to connect to for {@code host:port}, from {@code resolved} (the one lookup the
   * connection uses); {@link Refused} when the host is outside the scope or resolves to an
   * internal address it may not use.
   *
   * @param ownAddresses looked up only when needed: the addresses the bases' hosts resolve to
   */
  InetSocketAddress connectable(String host, int port, InetAddress[] resolved, OwnAddresses ownAddresses) {
    if (resolved.length == 0) {
      throw new Refused("upstream request refused by policy: the host has no address");
    }
    String canonical = IpLiteral.canonical(host);
    for (Base base : bases) {
      if (IpLiteral.canonical(base.origin().host()).equals(canonical) && base.origin().port() == port) {
        return new InetSocketAddress(resolved[0], port);
      }
    }
    List<AllowedHost> entries = new ArrayList<>();
    for (AllowedHost entry : allowed) {
      if (entry.matches("http", canonical, port) || entry.matches("https", canonical, port)) {
        entries.add(entry);
      }
    }
    if (entries.isEmpty()) {
      throw new Refused("upstream request refused by policy: the host is neither the repository's upstream nor on its allowed-hosts");
    }
    Set<InetAddress> own = null;
    for (InetAddress address : resolved) {
      if (!InternalAddresses.contains(address)) {
        continue;
      }
      boolean named = entries.stream().anyMatch(e -> e.address().filter(address::equals).isPresent());
      if (named) {
        continue;
      }
      if (own == null) {
        own = ownAddresses.get(bases.stream().map(b -> b.origin().host()).toList());
      }
      if (!own.contains(address)) {
        throw new Refused("upstream request refused by policy: the host resolves to an internal address");
      }
    }
    return new InetSocketAddress(resolved[0], port);
  }

  /** The addresses of the bases' hosts (one DNS lookup each, on the caller's thread). */
  interface OwnAddresses {
    Set<InetAddress> get(List<String> hosts);

    OwnAddresses DNS = hosts -> {
      Set<InetAddress> out = new HashSet<>();
      for (String h : hosts) {
        try {
          out.addAll(List.of(InetAddress.getAllByName(h)));
        } catch (UnknownHostException e) {
          // an unresolvable base contributes nothing
        }
      }
      return out;
    };
  }

  private static boolean sameOrigin(HttpUpstream.Origin a, HttpUpstream.Origin b) {
    return a.scheme().equals(b.scheme()) && a.port() == b.port()
        && IpLiteral.canonical(a.host()).equals(IpLiteral.canonical(b.host()));
  }

  /**
   * The path with dot segments resolved, encoded dots, slashes and backslashes taken as a server
   * might decode them; empty when it climbs above the root.
   */
  static Optional<String> resolvedPath(String rawPath) {
    String p = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
    p = ENCODED_SLASH.matcher(ENCODED_DOT.matcher(p).replaceAll(".")).replaceAll("/");
    Deque<String> out = new ArrayDeque<>();
    String[] segments = p.split("/", -1);
    for (int i = 1; i < segments.length; i++) {
      String s = segments[i];
      boolean last = i == segments.length - 1;
      if (s.equals(".")) {
        if (last) out.addLast("");
      } else if (s.equals("..")) {
        if (out.isEmpty()) return Optional.empty();
        out.removeLast();
        if (last) out.addLast("");
      } else {
        out.addLast(s);
      }
    }
    return Optional.of("/" + String.join("/", out));
  }

  /** A path taken as a directory: ending with '/', "/" when empty. */
  private static String directory(String rawPath) {
    String p = rawPath == null || rawPath.isEmpty() ? "/" : rawPath;
    return p.endsWith("/") ? p : p + "/";
  }

  @Override
  public String toString() {
    return "UpstreamScope" + bases + " allowed-hosts " + allowed;
  }
}
