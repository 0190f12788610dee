package dev.corral.http.tls;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * PEM files as the JDK alone reads them: certificates ({@code BEGIN CERTIFICATE}) and an
 * unencrypted private key in PKCS#8 ({@code BEGIN PRIVATE KEY}), PKCS#1 ({@code BEGIN RSA
 * PRIVATE KEY}) or SEC1 ({@code BEGIN EC PRIVATE KEY}). The two older forms are wrapped into
 * PKCS#8 here, which is all BouncyCastle would have done for them.
 *
 * <p>Every failure is a {@link PemException} whose message names the file and never shows its
 * contents.
 */
public final class Pem {
  private static final Pattern BLOCK =
      Pattern.compile("-----BEGIN ([A-Z0-9 ]+)-----([^-]*)-----END \\1-----", Pattern.DOTALL);

  /** rsaEncryption, 1.2.840.113549.1.1.1, with its NULL parameters. */
  private static final byte[] RSA_ALGORITHM = {0x30, 0x0d, 0x06, 0x09, 0x2a, (byte) 0x86, 0x48, (byte) 0x86,
      (byte) 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00};
  /** id-ecPublicKey, 1.2.840.10045.2.1. */
  private static final byte[] EC_PUBLIC_KEY_OID = {0x06, 0x07, 0x2a, (byte) 0x86, 0x48, (byte) 0xce, 0x3d, 0x02, 0x01};

  private Pem() {}

  /** A PEM file could not be used; the message names the file and says why, without its contents. */
  public static final class PemException extends Exception {
    PemException(Path file, String why) {
      super(file + ": " + why);
    }
  }

  private record Block(String type, byte[] der) {}

  /** The certificates in {@code file}, in order; at least one. */
  public static List<X509Certificate> certificates(Path file) throws PemException {
    List<X509Certificate> certs = new ArrayList<>();
    try {
      CertificateFactory factory = CertificateFactory.getInstance("X.509");
      for (Block b : blocks(file)) {
        if (b.type.equals("CERTIFICATE") || b.type.equals("TRUSTED CERTIFICATE")) {
          certs.add((X509Certificate) factory.generateCertificate(new ByteArrayInputStream(b.der)));
        }
      }
    } catch (GeneralSecurityException e) {
      throw new PemException(file, "not a valid certificate (" + e.getClass().getSimpleName() + ")");
    }
    if (certs.isEmpty()) {
      throw new PemException(file, "no PEM certificate (-----BEGIN CERTIFICATE-----) found");
    }
    return certs;
  }

  /** The one private key in {@code file}: PKCS#8, PKCS#1 RSA or SEC1 EC, unencrypted. */
  public static PrivateKey privateKey(Path file) throws PemException {
    for (Block b : blocks(file)) {
      switch (b.type) {
        case "PRIVATE KEY":
          return pkcs8(file, b.der);
        case "RSA PRIVATE KEY":
          return pkcs8(file, pkcs8Of(RSA_ALGORITHM, b.der));
        case "EC PRIVATE KEY":
          return pkcs8(file, pkcs8Of(ecAlgorithm(file, b.der), b.der));
        case "ENCRYPTED PRIVATE KEY":
          throw new PemException(file, "the private key is encrypted; give it unencrypted (file mode 0600)");
        default:
          // EC PARAMETERS and other blocks before the key are skipped
      }
    }
    throw new PemException(file, "no PEM private key (-----BEGIN PRIVATE KEY-----, RSA or EC) found");
  }

  private static List<Block> blocks(Path file) throws PemException {
    String text;
    try {
      text = Files.readString(file, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new PemException(file, "cannot read (" + e.getClass().getSimpleName() + ")");
    }
    List<Block> blocks = new ArrayList<>();
    Matcher m = BLOCK.matcher(text);
    while (m.find()) {
      try {
        blocks.add(new Block(m.group(1), Base64.getMimeDecoder().decode(m.group(2).trim())));
      } catch (IllegalArgumentException e) {
        throw new PemException(file, "a " + m.group(1) + " block is not valid base64");
      }
    }
    return blocks;
  }

  private static PrivateKey pkcs8(Path file, byte[] der) throws PemException {
    for (String algorithm : new String[] {"RSA", "EC", "Ed25519", "RSASSA-PSS"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
      } catch (GeneralSecurityException e) {
        // try the next algorithm
      }
    }
    throw new PemException(file, "not a valid RSA, EC or Ed25519 private key");
  }

  /**
   * The AlgorithmIdentifier of a SEC1 key: id-ecPublicKey with the curve named in the key's
   * {@code [0]} parameters. SEC1: SEQUENCE { INTEGER 1, OCTET STRING, [0] OID, [1] BIT STRING }.
   */
  private static byte[] ecAlgorithm(Path file, byte[] sec1) throws PemException {
    try {
      Der seq = new Der(sec1, 0);
      int at = seq.contentStart;
      Der version = new Der(sec1, at);
      Der key = new Der(sec1, version.end);
      at = key.end;
      while (at < seq.end) {
        Der field = new Der(sec1, at);
        if ((field.tag & 0xff) == 0xa0) {
          Der oid = new Der(sec1, field.contentStart);
          ByteArrayOutputStream params = new ByteArrayOutputStream();
          params.write(EC_PUBLIC_KEY_OID);
          params.write(sec1, oid.start, oid.end - oid.start);
          return tagged(0x30, params.toByteArray());
        }
        at = field.end;
      }
    } catch (RuntimeException | IOException e) {
      // fall through
    }
    throw new PemException(file, "the EC private key names no curve");
  }

  /** PrivateKeyInfo: SEQUENCE { INTEGER 0, AlgorithmIdentifier, OCTET STRING key }. */
  private static byte[] pkcs8Of(byte[] algorithm, byte[] key) {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    body.writeBytes(new byte[] {0x02, 0x01, 0x00});
    body.writeBytes(algorithm);
    body.writeBytes(tagged(0x04, key));
    return tagged(0x30, body.toByteArray());
  }

  private static byte[] tagged(int tag, byte[] content) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(tag);
    int n = content.length;
    if (n < 0x80) {
      out.write(n);
    } else {
      int bytes = (32 - Integer.numberOfLeadingZeros(n) + 7) / 8;
      out.write(0x80 | bytes);
      for (int i = bytes - 1; i >= 0; i--) {
        out.write(n >>> (8 * i));
      }
    }
    out.writeBytes(content);
    return out.toByteArray();
  }

  /** One DER element's tag and extent. */
  private static final class Der {
    final int tag;
    final int start;
    final int contentStart;
    final int end;

    Der(byte[] b, int at) {
      start = at;
      tag = b[at] & 0xff;
      int len = b[at + 1] & 0xff;
      int p = at + 2;
      if (len >= 0x80) {
        int bytes = len & 0x7f;
        if (bytes < 1 || bytes > 3) {
          throw new IllegalArgumentException("bad DER length");
        }
        len = 0;
        for (int i = 0; i < bytes; i++) {
          len = (len << 8) | (b[p++] & 0xff);
        }
      }
      contentStart = p;
      end = p + len;
      if (end > b.length) {
        throw new IllegalArgumentException("DER runs past the end");
      }
    }
  }
}
