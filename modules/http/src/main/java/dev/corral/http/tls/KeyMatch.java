package dev.corral.http.tls;

import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.X509Certificate;

/** Whether a private key belongs to a certificate: a signature made with one is checked with the other. */
final class KeyMatch {
  private KeyMatch() {}

  static void check(X509Certificate cert, PrivateKey key, Path keyFile) throws Pem.PemException {
    String algorithm = switch (key.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "EC" -> "SHA256withECDSA";
      case "Ed25519", "EdDSA" -> "Ed25519";
      default -> null;
    };
    if (algorithm == null) {
      throw new Pem.PemException(keyFile, "unsupported key type " + key.getAlgorithm());
    }
    byte[] probe = "corral key check".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    try {
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(cert.getPublicKey());
      verifier.update(probe);
      if (verifier.verify(signature)) {
        return;
      }
    } catch (GeneralSecurityException e) {
      // a key of another type than the certificate's: not a match
    }
    throw new Pem.PemException(keyFile, "the private key does not belong to the certificate "
        + cert.getSubjectX500Principal().getName());
  }
}
