package dev.corral.core.store;

import dev.corral.core.upstream.Header;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One copy, in the index, of each stored header that many keys have alike: every header name,
 * each value of the headers whose values repeat across keys (Content-Type, Cache-Control,
 * Content-Language), and each whole header list made of such headers only. A million keys that
 * all say {@code Content-Type: application/octet-stream} then hold one list between them instead
 * of a million (about 170 bytes a key). ETag, Last-Modified and the like differ from key to key
 * and are kept as they come. Each table is bounded, so an upstream that makes up a new value for
 * every response costs at most the bound; past it, headers are simply not shared. Thread-safe.
 */
final class SharedHeaders {
  /** Distinct names, values and lists kept, each. */
  static final int MAX = 4096;

  private static final List<String> REPEATING = List.of("content-type", "cache-control", "content-language");

  private final Map<String, String> names = new ConcurrentHashMap<>();
  private final Map<Header, Header> headers = new ConcurrentHashMap<>();
  private final Map<List<Header>, List<Header>> lists = new ConcurrentHashMap<>();

  /** An immutable list equal to {@code given}, shared with other keys where it can be. */
  List<Header> share(List<Header> given) {
    if (given.isEmpty()) {
      return List.of();
    }
    List<Header> known = lists.get(given);
    if (known != null) {
      return known;
    }
    List<Header> copy = new ArrayList<>(given.size());
    boolean allRepeating = true;
    for (Header h : given) {
      copy.add(header(h));
      allRepeating &= repeating(h.name());
    }
    List<Header> result = List.copyOf(copy);
    return allRepeating ? intern(lists, result) : result;
  }

  private Header header(Header h) {
    if (repeating(h.name())) {
      Header known = headers.get(h);
      if (known != null) {
        return known;
      }
      return intern(headers, new Header(intern(names, h.name()), h.value()));
    }
    String name = intern(names, h.name());
    return name == h.name() ? h : new Header(name, h.value());
  }

  private static boolean repeating(String name) {
    for (String r : REPEATING) {
      if (r.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  private static <T> T intern(Map<T, T> table, T value) {
    T known = table.get(value);
    if (known != null) {
      return known;
    }
    if (table.size() >= MAX) {
      return value;
    }
    known = table.putIfAbsent(value, value);
    return known != null ? known : value;
  }
}
