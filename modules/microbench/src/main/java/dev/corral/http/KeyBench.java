package dev.corral.http;

import dev.corral.core.key.ArtifactKey;
import dev.corral.registry.Lookup;
import dev.corral.registry.RepoRequest;
import dev.corral.registry.Repository;
import dev.corral.registry.Target;
import dev.corral.registry.generic.GenericRepository;
import dev.corral.registry.go.GoRepository;
import dev.corral.registry.maven.MavenRepository;
import dev.corral.registry.npm.NpmRepository;
import dev.corral.registry.pypi.PypiRepository;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.util.ByteString;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Key derivation per repository type, as a hit pays it: the raw path checked and split
 * ({@link RequestPath}), the repository's {@code resolve} to a key, and the key's id (the
 * SHA-256 that names its entity and its store record). Each path is an artifact of its type that
 * resolves without reading another document.
 */
@State(Scope.Benchmark)
public class KeyBench extends HitPathBench {
  private static final String UPSTREAM = "http://upstream.example";

  @Param({"generic", "npm", "maven", "pypi", "go"})
  public String type;

  private Repository repo;
  private String rawPath;

  /** Nothing is cached and nothing can be read: a path that needed a document would fail here. */
  private static final Lookup NOTHING = new Lookup() {
    @Override
    public CompletionStage<Optional<ByteString>> body(ArtifactKey key, boolean mutable) {
      return CompletableFuture.completedFuture(Optional.empty());
    }

    @Override
    public Optional<ByteString> cached(ArtifactKey key) {
      return Optional.empty();
    }
  };

  @Setup
  public void setUp() {
    switch (type) {
      case "generic" -> {
        repo = new GenericRepository("files", UPSTREAM);
        rawPath = "/files/releases/tool/1.4.2/tool-1.4.2-linux-amd64.tar.gz";
      }
      case "npm" -> {
        repo = new NpmRepository("npm", UPSTREAM);
        rawPath = "/npm/@scope/some-package/-/some-package-4.17.21.tgz";
      }
      case "maven" -> {
        repo = new MavenRepository("maven", UPSTREAM);
        rawPath = "/maven/org/example/group/artifact/2.3.1/artifact-2.3.1.jar";
      }
      case "pypi" -> {
        repo = new PypiRepository("pypi", UPSTREAM);
        rawPath = "/pypi/some-package/"; // the project page (a file needs its page read first)
      }
      case "go" -> {
        repo = new GoRepository("go", UPSTREAM);
        rawPath = "/go/example.com/org/module/@v/v1.2.3.zip";
      }
      default -> throw new IllegalArgumentException(type);
    }
    if (!(key() instanceof ArtifactKey)) {
      throw new IllegalStateException(type + ": " + rawPath + " does not resolve to a key");
    }
  }

  @Benchmark
  public Object key() {
    RequestPath.Ok ok = (RequestPath.Ok) RequestPath.parse(rawPath, repo.allowsEncodedSlash());
    RepoRequest request = new RepoRequest(ok.segments(), ok.upstreamPath(), Optional.empty(), Optional.empty(),
        "http://127.0.0.1:8080/" + ok.repo());
    Target target = repo.resolve(request, NOTHING).toCompletableFuture().join();
    return target instanceof Target.Artifact a ? a.key() : target;
  }

  @Benchmark
  public String keyId() {
    return ((ArtifactKey) key()).id();
  }
}
