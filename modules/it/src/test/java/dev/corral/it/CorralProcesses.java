package dev.corral.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The processes a test started: stopped after each test (SIGTERM, a bounded wait, SIGKILL), and
 * their captured output printed when the test failed. Register with {@code @RegisterExtension}.
 */
final class CorralProcesses implements AfterEachCallback {
  private final List<CorralProcess> started = new ArrayList<>();

  CorralProcess serve(String name, List<String> javaOpts, Path dataDir, List<String> extraArgs, String... repos)
      throws IOException {
    return track(CorralProcess.serve(name, javaOpts, dataDir, extraArgs, repos));
  }

  CorralProcess serve(String name, List<String> javaOpts, Map<String, String> env, Path dataDir, List<String> extraArgs,
      String... repos) throws IOException {
    return track(CorralProcess.serve(name, javaOpts, env, dataDir, extraArgs, repos));
  }

  CorralProcess track(CorralProcess p) {
    started.add(p);
    return p;
  }

  /** Stops every process now (for tests that must clean up after them); output stays for failures. */
  void stopAll() {
    terminateAll();
    started.forEach(CorralProcess::close);
  }

  /** SIGTERM to every process at once, so that their graceful stops overlap instead of queueing. */
  private void terminateAll() {
    started.stream().filter(CorralProcess::isAlive).forEach(CorralProcess::terminate);
  }

  @Override
  public void afterEach(ExtensionContext context) {
    boolean failed = context.getExecutionException().isPresent();
    terminateAll();
    for (CorralProcess p : started) {
      p.close();
      if (failed) {
        System.err.println(p.output());
      }
    }
    started.clear();
  }
}
