package dev.corral.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.corral.testkit.Await;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * SEMANTICS L4 with real clients: curl processes, rate limited to 2 MB/s, each reading a large
 * body from a node; once every one has part of it and none has all, the node stops; each must
 * then have read every byte and exited 0. Several at once make a loss near certain where one
 * connection lost its end only in some runs (when its last bytes were still in the node's
 * buffers, not yet in the kernel's).
 */
final class SlowReaders {
  private SlowReaders() {}

  /**
   * @param node stopped here (closed in any case)
   * @param names one per reader, for the failure messages
   * @param curl the command of reader {@code i} writing its body to the given file
   * @param nodeSending what else must hold before the stop (the node counting the readers, say)
   */
  static void readWholeAcrossTheStop(CorralServer node, Path dir, byte[] expected, List<String> names,
      BiFunction<Integer, Path, List<String>> curl, BooleanSupplier nodeSending) throws Exception {
    List<Process> slow = new ArrayList<>();
    List<Path> outs = new ArrayList<>();
    boolean closed = false;
    try {
      for (int i = 0; i < names.size(); i++) {
        Path out = dir.resolve("out-" + i + ".bin");
        outs.add(out);
        List<String> command = new ArrayList<>(curl.apply(i, out));
        command.addAll(1, List.of("--limit-rate", "2M"));
        slow.add(new ProcessBuilder(command).redirectErrorStream(true)
            .redirectOutput(dir.resolve("curl-" + i + ".log").toFile()).start());
      }
      // Read partway, not "the node still sending": a body counts as sent once it has left the
      // store, while the socket buffers still hold megabytes of it.
      Await.until(Duration.ofSeconds(30), () -> "every reader partway: read " + outs.stream().map(SlowReaders::size).toList()
              + "; curl: " + logs(dir, names.size()),
          () -> nodeSending.getAsBoolean()
              && outs.stream().allMatch(out -> size(out) > 1024 * 1024 && size(out) < expected.length));
      closed = true;
      CompletableFuture<Void> stopped = CompletableFuture.runAsync(() -> {
        try {
          node.close();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });
      for (Process p : slow) {
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "curl still reading after 60 s");
      }
      stopped.get(60, TimeUnit.SECONDS);
      for (int i = 0; i < names.size(); i++) {
        String what = names.get(i);
        assertEquals(0, slow.get(i).exitValue(),
            what + ": " + Files.readString(dir.resolve("curl-" + i + ".log"), StandardCharsets.UTF_8));
        byte[] body = Files.readAllBytes(outs.get(i));
        assertEquals(expected.length, body.length, what + ": the body's length");
        assertArrayEquals(expected, body, what);
      }
    } finally {
      slow.forEach(Process::destroyForcibly);
      if (!closed) {
        node.close();
      }
    }
  }

  static long size(Path file) {
    try {
      return Files.exists(file) ? Files.size(file) : 0;
    } catch (IOException e) {
      return 0;
    }
  }

  private static String logs(Path dir, int readers) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < readers; i++) {
      try {
        b.append(i).append(": ").append(Files.readString(dir.resolve("curl-" + i + ".log"), StandardCharsets.UTF_8).strip())
            .append("; ");
      } catch (IOException e) {
        b.append(i).append(": ").append(e).append("; ");
      }
    }
    return b.toString();
  }
}
