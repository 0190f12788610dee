package dev.corral.registry;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * Mutated input for the hostile-input tests of each repository type (npm's and PyPI's
 * {@code HostileInputTest}, and this package's for the shared helpers): edits from a fixed seed,
 * so a failure names a document that can be made again.
 */
public final class HostileInput {
  private HostileInput() {}

  private static final String ALPHABET = "<>\"'=&;#%/\\{}[]:,. \n\tahref0123456789xX+-_@!?\u00e9\u2603";

  /** One to eight edits: a character deleted, one inserted, or the rest cut off. */
  public static String mutate(String s, Random r) {
    StringBuilder b = new StringBuilder(s);
    int edits = 1 + r.nextInt(8);
    for (int i = 0; i < edits && b.length() > 0; i++) {
      int at = r.nextInt(b.length());
      switch (r.nextInt(3)) {
        case 0 -> b.deleteCharAt(at);
        case 1 -> b.insert(at, ALPHABET.charAt(r.nextInt(ALPHABET.length())));
        default -> b.setLength(at); // truncated
      }
    }
    return b.toString();
  }

  /** A garbled {@code Accept} header and a garbled package or file name. */
  public record Garbled(String accept, String name) {}

  /** 3000 garbled {@code Accept} headers and names from seed 7: the same list in every package's test. */
  public static List<Garbled> acceptHeadersAndNames() {
    Random r = new Random(7);
    List<Garbled> out = new ArrayList<>();
    for (int i = 0; i < 3000; i++) {
      String accept = mutate("application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8, */*", r);
      String name = mutate("@demo/scoped%2F-1.0.0.tgz", r);
      out.add(new Garbled(accept, name));
    }
    return out;
  }
}
