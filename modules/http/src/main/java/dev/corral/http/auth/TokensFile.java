package dev.corral.http.auth;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tokens file, read at start-up and again whenever it changes. {@link #tokens()} looks at the
 * file's modified time and size (one {@code stat}) on each call; when either differs from the
 * last read, the file is read again and, if its content hash differs too, parsed and put in
 * place. So a change is in force for the very next request, with no timer. A changed file that
 * cannot be read or parsed is logged (one line, with the line number) and the credentials read
 * before stay in force: a half-written file never locks everyone out or lets everyone in.
 */
public final class TokensFile {
  private static final Logger log = LoggerFactory.getLogger(TokensFile.class);

  private final Path file;
  private final Set<String> knownRepos;
  private volatile Snapshot current;

  private record Snapshot(FileTime modified, long size, byte[] contentSha256, List<ClientToken> tokens) {}

  private TokensFile(Path file, Set<String> knownRepos, Snapshot first) {
    this.file = file;
    this.knownRepos = Set.copyOf(knownRepos);
    this.current = first;
  }

  /**
   * Reads {@code file} for the first time.
   *
   * @throws TokenLines.Malformed naming the first bad line
   * @throws IOException when it cannot be read
   */
  public static TokensFile open(Path file, Set<String> knownRepos) throws IOException {
    Objects.requireNonNull(file, "file");
    return new TokensFile(file, knownRepos, read(file, knownRepos));
  }

  public Path file() {
    return file;
  }

  /** The credentials in force: the file's as of now (re-read if it changed since the last call). */
  public List<ClientToken> tokens() {
    Snapshot s = current;
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(file, BasicFileAttributes.class);
    } catch (IOException e) {
      warnOnce(s, "cannot read " + file + " (" + e.getClass().getSimpleName() + "): keeping the credentials read before");
      return s.tokens();
    }
    if (a.lastModifiedTime().equals(s.modified()) && a.size() == s.size()) {
      return s.tokens();
    }
    return reload(s);
  }

  private synchronized List<ClientToken> reload(Snapshot seen) {
    if (current != seen) {
      return current.tokens(); // another request reloaded meanwhile
    }
    try {
      Snapshot next = read(file, knownRepos);
      if (!MessageDigest.isEqual(next.contentSha256(), seen.contentSha256())) {
        log.info("tokens file {} changed: {} credential(s) now", file, next.tokens().size());
      }
      current = next;
    } catch (IOException | TokenLines.Malformed e) {
      // Remember the stat so the error is logged once per change, not once per request.
      current = new Snapshot(statOrNull(), sizeOrMinus(), seen.contentSha256(), seen.tokens());
      log.error("tokens file {} {}: keeping the {} credential(s) read before", file,
          e instanceof TokenLines.Malformed ? e.getMessage() : "cannot be read (" + e.getClass().getSimpleName() + ")",
          seen.tokens().size());
    }
    return current.tokens();
  }

  private void warnOnce(Snapshot s, String message) {
    if (s.modified() != null) {
      log.error(message);
      current = new Snapshot(null, -1, s.contentSha256(), s.tokens());
    }
  }

  private FileTime statOrNull() {
    try {
      return Files.getLastModifiedTime(file);
    } catch (IOException e) {
      return null;
    }
  }

  private long sizeOrMinus() {
    try {
      return Files.size(file);
    } catch (IOException e) {
      return -1;
    }
  }

  private static Snapshot read(Path file, Set<String> knownRepos) throws IOException {
    // The stat is taken before the read: a write landing in between is seen as a change next time.
    BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
    byte[] bytes = Files.readAllBytes(file);
    List<ClientToken> tokens = TokenLines.parse(new String(bytes, java.nio.charset.StandardCharsets.UTF_8), knownRepos);
    return new Snapshot(a.lastModifiedTime(), a.size(), PresentedSecret.sha256(bytes), tokens);
  }
}
