package dev.corral.registry.go;

import dev.corral.registry.GroupMerge;
import dev.corral.registry.RepoRequest;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.pekko.util.ByteString;

/**
 * A Go group's {@code @v/list}: the union of its members' lists, one version a line, in semantic
 * version order (what the go command shows; the protocol leaves the order open). Lines that are
 * not versions sort after the versions, in text order. Everything else (the {@code @latest} of a
 * module, {@code .info}, {@code .mod}, {@code .zip}) is the first member's that has it.
 */
public final class VersionListMerge implements GroupMerge {
  private static final Pattern SEMVER =
      Pattern.compile("v(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-([0-9A-Za-z.-]+))?(?:\\+[0-9A-Za-z.-]+)?");

  @Override
  public Optional<RepoRequest> mergedFrom(RepoRequest request) {
    List<String> s = request.segments();
    int n = s.size();
    return n >= 3 && s.get(n - 2).equals("@v") && s.get(n - 1).equals("list") ? Optional.of(request) : Optional.empty();
  }

  @Override
  public Merged merge(RepoRequest request, List<ByteString> bodies) {
    Set<String> versions = new LinkedHashSet<>();
    for (ByteString b : bodies) {
      for (String line : b.decodeString(StandardCharsets.UTF_8).split("\n")) {
        String v = line.trim();
        if (!v.isEmpty()) {
          versions.add(v);
        }
      }
    }
    List<String> sorted = new ArrayList<>(versions);
    sorted.sort(ORDER);
    StringBuilder out = new StringBuilder();
    for (String v : sorted) {
      out.append(v).append('\n');
    }
    return new Merged(ByteString.fromString(out.toString()), "text/plain; charset=utf-8");
  }

  /** Semantic version order (a pre-release before its release); non-versions last, by text. */
  static final Comparator<String> ORDER = (a, b) -> {
    Matcher x = SEMVER.matcher(a);
    Matcher y = SEMVER.matcher(b);
    boolean vx = x.matches();
    boolean vy = y.matches();
    if (!vx || !vy) {
      return vx ? -1 : vy ? 1 : a.compareTo(b);
    }
    for (int i = 1; i <= 3; i++) {
      int c = new BigInteger(x.group(i)).compareTo(new BigInteger(y.group(i)));
      if (c != 0) {
        return c;
      }
    }
    String px = x.group(4);
    String py = y.group(4);
    if (px == null || py == null) {
      return px == null ? (py == null ? a.compareTo(b) : 1) : -1;
    }
    String[] ix = px.split("\\.");
    String[] iy = py.split("\\.");
    for (int i = 0; i < Math.min(ix.length, iy.length); i++) {
      boolean nx = ix[i].matches("\\d+");
      boolean ny = iy[i].matches("\\d+");
      int c = nx && ny ? new BigInteger(ix[i]).compareTo(new BigInteger(iy[i]))
          : nx ? -1 : ny ? 1 : ix[i].compareTo(iy[i]);
      if (c != 0) {
        return c;
      }
    }
    int c = Integer.compare(ix.length, iy.length);
    return c != 0 ? c : a.compareTo(b);
  };
}
