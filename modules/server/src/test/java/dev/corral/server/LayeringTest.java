package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The structure drawn from the imports of every module's main code (docs/architecture.md,
 * "Layout"): no circle between packages, and no module importing one above it.
 */
class LayeringTest {
  /**
   * Modules from the bottom up: each may import only those before it. The test kits come last,
   * so that no module's main code can import them.
   */
  private static final List<String> MODULES =
      List.of("core", "registry", "cluster", "http", "server", "testkit-upstream", "testkit");

  private static final Pattern PACKAGE = Pattern.compile("^package (dev\\.corral[\\w.]*);", Pattern.MULTILINE);
  private static final Pattern IMPORT =
      Pattern.compile("^import (?:static )?(dev\\.corral(?:\\.[a-z]\\w*)*)\\.[A-Z]", Pattern.MULTILINE);

  /** Package to the packages it imports, and package to its module. */
  private static final Map<String, Set<String>> imports = new TreeMap<>();
  private static final Map<String, String> moduleOf = new HashMap<>();

  @BeforeAll
  static void read() throws IOException {
    // Surefire runs in modules/server; its siblings are the other modules.
    Path modules = Path.of(System.getProperty("basedir", System.getProperty("user.dir"))).toAbsolutePath().getParent();
    for (String module : MODULES) {
      Path main = modules.resolve(module).resolve("src/main/java");
      if (!Files.isDirectory(main)) {
        continue;
      }
      try (Stream<Path> files = Files.walk(main)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".java")).toList()) {
          String text = Files.readString(f);
          Matcher p = PACKAGE.matcher(text);
          assertTrue(p.find(), f + " has no package line");
          String pkg = p.group(1);
          moduleOf.put(pkg, module);
          Set<String> to = imports.computeIfAbsent(pkg, k -> new TreeSet<>());
          Matcher i = IMPORT.matcher(text);
          while (i.find()) {
            if (!i.group(1).equals(pkg)) {
              to.add(i.group(1));
            }
          }
        }
      }
    }
    assertTrue(imports.size() > 10, "read the packages of " + modules);
  }

  @Test
  void noPackageImportsAPackageThatImportsItBack() {
    List<String> circles = new ArrayList<>();
    Map<String, Integer> state = new HashMap<>();
    for (String p : imports.keySet()) {
      walk(p, new ArrayList<>(), state, circles);
    }
    assertEquals(List.of(), circles);
  }

  private static void walk(String p, List<String> path, Map<String, Integer> state, List<String> circles) {
    Integer s = state.get(p);
    if (s != null) {
      if (s == 1) {
        circles.add(String.join(" -> ", path.subList(path.indexOf(p), path.size())) + " -> " + p);
      }
      return;
    }
    state.put(p, 1);
    path.add(p);
    for (String next : imports.getOrDefault(p, Set.of())) {
      walk(next, path, state, circles);
    }
    path.remove(path.size() - 1);
    state.put(p, 2);
  }

  @Test
  void noModuleImportsAModuleAboveIt() {
    List<String> upward = new ArrayList<>();
    imports.forEach((from, tos) -> {
      for (String to : tos) {
        String a = moduleOf.get(from);
        String b = moduleOf.get(to);
        if (b != null && MODULES.indexOf(b) > MODULES.indexOf(a)) {
          upward.add(from + " (" + a + ") -> " + to + " (" + b + ")");
        }
      }
    });
    assertEquals(List.of(), upward);
  }
}
