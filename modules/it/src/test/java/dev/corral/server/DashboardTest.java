package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.testkit.TestNodeExtension;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * deploy/grafana/corral-dashboard.json queries only metrics Corral exports (issue 16), and
 * docs/operations.md names every {@code corral_} metric a node exports: every
 * metric name in its PromQL (panels' {@code expr}, variables' {@code label_values}) is one that an
 * in-process node's {@code /-/metrics} shows, as a sample or as a family whose exposed names it is
 * ({@code _total} of a counter, {@code _bucket}, {@code _sum} and {@code _count} of a histogram).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class DashboardTest {
  static final Path DASHBOARD = Path.of("deploy", "grafana", "corral-dashboard.json");

  @RegisterExtension
  final TestNodeExtension node = TestNodeExtension.routed()
      .config(n -> "corral.repo-defaults.max-age-unused = 30d"); // so that the cleanup metrics exist

  private static final Set<String> PROMQL_WORDS = Set.of(
      "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset");
  private static final Pattern TYPE = Pattern.compile("# TYPE (\\S+) (\\S+)");
  private static final Pattern IDENTIFIER = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");

  @Test
  void everyMetricTheDashboardQueriesIsOneCorralExports() throws Exception {
    JsonNode dashboard = new ObjectMapper().readTree(Files.readString(repoRoot().resolve(DASHBOARD)));
    List<String> queries = new ArrayList<>();
    collect(dashboard, queries);
    Set<String> used = new TreeSet<>();
    queries.forEach(q -> used.addAll(metricNames(q)));
    assertTrue(used.size() >= 25, "the dashboard's queries were read: " + used);

    HttpResponse<byte[]> r = node.get("/-/metrics");
    assertEquals(200, r.statusCode());
    Set<String> exported = exportedNames(new String(r.body(), StandardCharsets.UTF_8));
    Set<String> unknown = new TreeSet<>(used);
    unknown.removeAll(exported);
    assertEquals(Set.of(), unknown, "queried by the dashboard but not exported");
  }

  @Test
  void everyCorralMetricANodeExportsIsDocumentedInOperations() throws Exception {
    String docs = Files.readString(repoRoot().resolve("docs").resolve("operations.md"));
    HttpResponse<byte[]> r = node.get("/-/metrics");
    assertEquals(200, r.statusCode());
    Set<String> undocumented = new TreeSet<>();
    Matcher t = TYPE.matcher(new String(r.body(), StandardCharsets.UTF_8));
    int seen = 0;
    while (t.find()) {
      String family = t.group(1);
      if (family.startsWith("corral_")) {
        seen++;
        // Named in code quotes, alone or with its labels; a counter also by its _total name.
        String base = family.endsWith("_total") ? family.substring(0, family.length() - "_total".length()) : family;
        Pattern named = Pattern.compile("`" + Pattern.quote(base) + "(_total)?[`{]");
        if (!named.matcher(docs).find()) {
          undocumented.add(family);
        }
      }
    }
    assertTrue(seen >= 30, "the node's metrics were read: " + seen);
    assertEquals(Set.of(), undocumented, "exported but not named in docs/operations.md");
  }

  @Test
  void theNameExtractionSeesMetricsNotFunctionsLabelsOrVariables() {
    assertEquals(Set.of("a_total", "b_bucket"), metricNames(
        "sum by (le, repo) (rate(a_total{repo=~\"$repo\", status!~\"2..\"}[$__rate_interval])) "
            + "/ on (instance) histogram_quantile(0.95, rate(b_bucket[5m]))"));
    assertEquals(Set.of("corral_node_info"), metricNames("label_values(corral_node_info, instance)"));
  }

  /** Every PromQL text of the dashboard: panels' {@code expr}, variables' queries. */
  private static void collect(JsonNode node, List<String> queries) {
    if (node.isObject()) {
      node.fields().forEachRemaining(e -> {
        if ((e.getKey().equals("expr") || e.getKey().equals("definition")) && e.getValue().isTextual()) {
          queries.add(e.getValue().asText());
        } else {
          collect(e.getValue(), queries);
        }
      });
    } else if (node.isArray()) {
      node.forEach(n -> collect(n, queries));
    }
  }

  /** The metric names in one PromQL expression (or Grafana's {@code label_values(metric, label)}). */
  static Set<String> metricNames(String promql) {
    String q = promql
        .replaceAll("\"(?:[^\"\\\\]|\\\\.)*\"", "\"\"") // strings
        .replaceAll("\\{[^}]*}", " ") // label matchers
        .replaceAll("\\[[^]]*]", " ") // ranges
        .replaceAll("\\b(by|without|on|ignoring|group_left|group_right)\\s*\\([^)]*\\)", " ") // label lists
        .replaceAll("\\$\\w+", " ") // variables
        .replaceAll("label_values\\(\\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\\s*,[^)]*\\)", " $1 ");
    Set<String> names = new TreeSet<>();
    Matcher m = IDENTIFIER.matcher(q);
    while (m.find()) {
      String word = m.group();
      boolean call = q.substring(m.end()).stripLeading().startsWith("(");
      boolean inNumber = m.start() > 0 && (Character.isDigit(q.charAt(m.start() - 1)) || q.charAt(m.start() - 1) == '.');
      if (!call && !inNumber && !PROMQL_WORDS.contains(word)) {
        names.add(word);
      }
    }
    return names;
  }

  /** The names a scrape exposes: its samples', and each family's by its type. */
  static Set<String> exportedNames(String exposition) {
    Set<String> names = new TreeSet<>(Scrape.parse(exposition).names());
    Matcher t = TYPE.matcher(exposition);
    while (t.find()) {
      String family = t.group(1);
      switch (t.group(2)) {
        case "counter" -> names.add(family.endsWith("_total") ? family : family + "_total");
        case "histogram" -> names.addAll(List.of(family + "_bucket", family + "_sum", family + "_count"));
        case "summary" -> names.addAll(List.of(family, family + "_sum", family + "_count"));
        default -> names.add(family);
      }
    }
    return names;
  }

  /** The repository's root: the working directory of a module's tests is the module. */
  static Path repoRoot() {
    Path dir = Path.of("").toAbsolutePath();
    for (int up = 0; up < 4 && dir != null; up++, dir = dir.getParent()) {
      if (Files.isRegularFile(dir.resolve(DASHBOARD))) {
        return dir;
      }
    }
    throw new AssertionError(DASHBOARD + " not found above " + Path.of("").toAbsolutePath());
  }
}
