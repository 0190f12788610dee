package dev.corral.http.auth;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.time.Clock;
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
 *
 * <p>The stat cannot see every change: a modified time has a granularity (a coarse kernel clock
 * tick, a second or two on some file systems), and replacing one 64-hex hash by another keeps the
 * size, so a token revoked within the tick of the last read would stay valid until the next
 * change. So a read whose file was modified less than {@value #RACY_MILLIS} ms before it is
 * "racy" (as git calls it): until a read finds the file older than that, every call reads the
 * file again and compares its content hash, not trusting the stat.
 */
public final class TokensFile {
  private static final Logger log = LoggerFactory.getLogger(TokensFile.class);
  /** Longer than any modified-time granularity in use (FAT's is 2 s). */
  static final long RACY_MILLIS = 3_000;

  private final Path file;
  private final Set<String> knownRepos;
  /** What a read's "now" is measured on against the file's modified time. */
  private final Clock clock;
  private volatile Snapshot current;

  /**
   * What the last read saw: the file's stat taken before reading it, whether that stat is too
   * recent to be trusted, the hash of the bytes read, and the credentials in force (those bytes'
   * when they parsed, else the ones before).
   */
  private record Snapshot(FileTime modified, long size, boolean racy, byte[] contentSha256, List<ClientToken> tokens) {}

  private TokensFile(Path file, Set<String> knownRepos, Clock clock, Snapshot first) {
    this.file = file;
    this.knownRepos = Set.copyOf(knownRepos);
    this.clock = clock;
    this.current = first;
  }

  /**
   * Reads {@code file} for the first time.
   *
   * @throws TokenLines.Malformed naming the first bad line
   * @throws IOException when it cannot be read
   */
  public static TokensFile open(Path file, Set<String> knownRepos) throws IOException {
    return open(file, knownRepos, Clock.systemUTC());
  }

  static TokensFile open(Path file, Set<String> knownRepos, Clock clock) throws IOException {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(clock, "clock");
    Read first = Read.of(file, clock);
    return new TokensFile(file, knownRepos, clock, first.snapshot(TokenLines.parse(first.text(), knownRepos)));
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
    if (!s.racy() && a.lastModifiedTime().equals(s.modified()) && a.size() == s.size()) {
      return s.tokens();
    }
    return reload(s);
  }

  private synchronized List<ClientToken> reload(Snapshot seen) {
    if (current != seen) {
      return current.tokens(); // another request reloaded meanwhile
    }
    Read read;
    try {
      read = Read.of(file, clock);
    } catch (IOException e) {
      warnOnce(seen, "cannot read " + file + " (" + e.getClass().getSimpleName() + "): keeping the credentials read before");
      return seen.tokens();
    }
    if (MessageDigest.isEqual(read.contentSha256(), seen.contentSha256())) {
      current = read.snapshot(seen.tokens()); // the same bytes: only the stat (or its raciness) moved on
      return seen.tokens();
    }
    try {
      List<ClientToken> tokens = TokenLines.parse(read.text(), knownRepos);
      log.info("tokens file {} changed: {} credential(s) now", file, tokens.size());
      current = read.snapshot(tokens);
    } catch (TokenLines.Malformed e) {
      // The bad bytes' hash is kept, so the error is logged once per change, not once per request.
      current = read.snapshot(seen.tokens());
      log.error("tokens file {} {}: keeping the {} credential(s) read before", file, e.getMessage(), seen.tokens().size());
    }
    return current.tokens();
  }

  private void warnOnce(Snapshot s, String message) {
    if (s.modified() != null) {
      log.error(message);
      current = new Snapshot(null, -1, false, s.contentSha256(), s.tokens());
    }
  }

  /** One read of the file: the stat taken before reading (a write landing in between is seen next time), the bytes. */
  private record Read(BasicFileAttributes stat, boolean racy, byte[] bytes, byte[] contentSha256) {
    static Read of(Path file, Clock clock) throws IOException {
      long now = clock.millis();
      BasicFileAttributes a = Files.readAttributes(file, BasicFileAttributes.class);
      byte[] bytes = Files.readAllBytes(file);
      boolean racy = a.lastModifiedTime().toMillis() > now - RACY_MILLIS;
      return new Read(a, racy, bytes, PresentedSecret.sha256(bytes));
    }

    String text() {
      return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    Snapshot snapshot(List<ClientToken> tokens) {
      return new Snapshot(stat.lastModifiedTime(), stat.size(), racy, contentSha256, tokens);
    }
  }
}
