package dev.corral.it;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * The Kubernetes objects of {@code deploy/kubernetes}, read with SnakeYAML as plain maps and
 * lists: {@link #applied()} is what {@code kubectl apply -k} applies (the files its
 * kustomization.yaml lists), {@link #all()} every object of every YAML file there.
 */
final class Manifests {
  /** One object of a manifest and the file it came from (for failure messages). */
  record Doc(String file, Map<String, Object> body) {
    String kind() {
      return Objects.toString(body.get("kind"), "");
    }

    String name() {
      return Objects.toString(map(body, "metadata").get("name"), "");
    }

    @Override
    public String toString() {
      return kind() + "/" + name() + " (" + file + ")";
    }
  }

  private final Path dir;
  private final List<Doc> applied;
  private final List<Doc> all;

  private Manifests(Path dir, List<Doc> applied, List<Doc> all) {
    this.dir = dir;
    this.applied = applied;
    this.all = all;
  }

  /** {@code deploy/kubernetes} of this checkout (found from the it module's directory). */
  static Path directory() {
    return CorralProcess.repoRoot().resolve("deploy/kubernetes");
  }

  static Manifests read(Path dir) throws IOException {
    List<Doc> applied = new ArrayList<>();
    for (Object file : list(load(dir.resolve("kustomization.yaml")).get(0).body(), "resources")) {
      applied.addAll(load(dir.resolve((String) file)));
    }
    List<Doc> all = new ArrayList<>();
    try (DirectoryStream<Path> files = Files.newDirectoryStream(dir, "*.yaml")) {
      for (Path f : files) {
        all.addAll(load(f));
      }
    }
    return new Manifests(dir, List.copyOf(applied), List.copyOf(all));
  }

  Path dir() {
    return dir;
  }

  List<Doc> applied() {
    return applied;
  }

  List<Doc> all() {
    return all;
  }

  List<Doc> applied(String kind) {
    return applied.stream().filter(d -> d.kind().equals(kind)).toList();
  }

  /** The one applied object of this kind and name; fails the test when there is none. */
  Doc one(String kind, String name) {
    return applied.stream().filter(d -> d.kind().equals(kind) && d.name().equals(name)).findFirst()
        .orElseThrow(() -> new AssertionError("no " + kind + " " + name + " among " + applied));
  }

  /** The objects of one file, in order (a file may hold several, separated by ---). */
  static List<Doc> load(Path file) throws IOException {
    Yaml yaml = new Yaml(new SafeConstructor(new LoaderOptions()));
    List<Doc> docs = new ArrayList<>();
    try (Reader in = Files.newBufferedReader(file)) {
      for (Object o : yaml.loadAll(in)) {
        if (o != null) {
          docs.add(new Doc(file.getFileName().toString(), cast(o)));
        }
      }
    }
    return docs;
  }

  // ---- navigation: a missing key is an empty map or list, so a check fails on the value ---------

  /** {@code m[k1][k2]...} as a map; empty when a key is missing. */
  static Map<String, Object> map(Map<String, Object> m, String... keys) {
    Map<String, Object> at = m;
    for (String k : keys) {
      Object v = at.get(k);
      if (!(v instanceof Map)) {
        return Map.of();
      }
      at = cast(v);
    }
    return at;
  }

  /** {@code m[k1]...[kn]} as a list; empty when missing. */
  static List<Object> list(Map<String, Object> m, String... keys) {
    Map<String, Object> parent = map(m, java.util.Arrays.copyOf(keys, keys.length - 1));
    Object v = parent.get(keys[keys.length - 1]);
    return v instanceof List<?> l ? new ArrayList<>(l) : List.of();
  }

  /** The list's elements that are maps. */
  static List<Map<String, Object>> maps(List<Object> l) {
    return l.stream().filter(o -> o instanceof Map).map(Manifests::cast).toList();
  }

  /** The first map of the list whose {@code key} equals {@code value}. */
  static Optional<Map<String, Object>> find(List<Object> l, String key, Object value) {
    return maps(l).stream().filter(byKey(key, value)).findFirst();
  }

  static Predicate<Map<String, Object>> byKey(String key, Object value) {
    return m -> Objects.equals(m.get(key), value);
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> cast(Object o) {
    return (Map<String, Object>) o;
  }

  // ---- pods ------------------------------------------------------------------------------------

  /** The pod template of a workload (StatefulSet, Job, ...). */
  static Map<String, Object> podTemplate(Doc workload) {
    return map(workload.body(), "spec", "template");
  }

  static List<Map<String, Object>> containers(Doc workload) {
    return maps(list(podTemplate(workload), "spec", "containers"));
  }

  /** A container's environment variable with a literal value; empty when absent or from a field ref. */
  static Optional<String> env(Map<String, Object> container, String name) {
    return find(list(container, "env"), "name", name).map(e -> e.get("value")).map(Object::toString);
  }

  /** A named container port's number. */
  static Optional<Integer> containerPort(Map<String, Object> container, String name) {
    return find(list(container, "ports"), "name", name).map(p -> (Integer) p.get("containerPort"));
  }

  /** A port given by number or by name, as a number of {@code container}. */
  static int resolvePort(Map<String, Object> container, Object port) {
    if (port instanceof Integer n) {
      return n;
    }
    return containerPort(container, String.valueOf(port))
        .orElseThrow(() -> new AssertionError("no container port named " + port));
  }
}
