package dev.corral.server;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalDouble;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A Prometheus text exposition read back: its samples, each with its name, labels and value. */
record Scrape(List<Sample> samples) {
  record Sample(String name, Map<String, String> labels, double value) {}

  private static final Pattern LINE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})? (\\S+)");
  private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

  static Scrape parse(String text) {
    List<Sample> samples = new ArrayList<>();
    for (String line : text.split("\n")) {
      if (line.isBlank() || line.startsWith("#")) {
        continue;
      }
      Matcher m = LINE.matcher(line);
      if (!m.matches()) {
        throw new IllegalArgumentException("not a sample line: " + line);
      }
      Map<String, String> labels = new LinkedHashMap<>();
      if (m.group(2) != null) {
        Matcher l = LABEL.matcher(m.group(2));
        while (l.find()) {
          labels.put(l.group(1), l.group(2));
        }
      }
      samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3))));
    }
    return new Scrape(samples);
  }

  /** Every sample name shown. */
  Set<String> names() {
    Set<String> names = new TreeSet<>();
    samples.forEach(s -> names.add(s.name()));
    return names;
  }

  /** The value of the sample with this name whose labels include {@code labels} (name, value, ...), if one. */
  OptionalDouble value(String name, String... labels) {
    for (Sample s : samples) {
      if (s.name().equals(name) && matches(s.labels(), labels)) {
        return OptionalDouble.of(s.value());
      }
    }
    return OptionalDouble.empty();
  }

  /** As {@link #value}, 0 when absent (a labelled counter not yet touched). */
  double valueOrZero(String name, String... labels) {
    return value(name, labels).orElse(0);
  }

  private static boolean matches(Map<String, String> have, String[] want) {
    for (int i = 0; i + 1 < want.length; i += 2) {
      if (!want[i + 1].equals(have.get(want[i]))) {
        return false;
      }
    }
    return true;
  }
}
