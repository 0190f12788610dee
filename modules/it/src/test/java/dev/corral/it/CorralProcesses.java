package dev.corral.it;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The processes a test started: killed after each test (SIGKILL: a test that needs a graceful stop
 * asks for it itself), and their captured output printed when the test failed. Register with
 * {@code @RegisterExtension}.
 *
 * <p>Not SIGTERM: every node of a cluster stopped at once waits out Pekko's 10 s cluster-exiting
 * phase (no member is left to see it leave), which cost each cluster test 10 s of its run.
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

  /** Kills every process now (for tests that must clean up after them); output stays for failures. */
  void stopAll() {
    killAll();
    started.forEach(CorralProcess::close);
  }

  /** SIGKILL to every process at once, then waits for each to be gone. */
  private void killAll() {
    started.stream().filter(CorralProcess::isAlive).forEach(CorralProcess::killNow);
    started.forEach(CorralProcess::kill);
  }

  @Override
  public void afterEach(ExtensionContext context) {
    boolean failed = context.getExecutionException().isPresent();
    killAll();
    for (CorralProcess p : started) {
      p.close();
      if (failed) {
        System.err.println(p.output());
      }
    }
    started.clear();
  }
}
