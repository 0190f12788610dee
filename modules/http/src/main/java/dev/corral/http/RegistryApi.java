package dev.corral.http;

import dev.corral.registry.oci.OciRepository;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.model.headers.RawHeader;

/**
 * The OCI Distribution API's place in Corral's paths: {@code /v2/} is the API version check and
 * {@code /v2/NAME/...} a request to the {@code oci} repository NAME, served as {@code /NAME/...}
 * would be. The name {@code v2} is therefore never a repository's.
 */
final class RegistryApi {
  private RegistryApi() {}

  static final RawHeader API_VERSION =
      RawHeader.create(OciRepository.API_VERSION.name(), OciRepository.API_VERSION.value());

  /** Whether a path (without its query) is under the API's prefix. */
  static boolean under(String path) {
    return path.equals("/v2") || path.startsWith("/v2/");
  }

  /** Whether a path (without its query) is the version check, {@code /v2/}. */
  static boolean isRoot(String path) {
    return path.equals("/v2") || path.equals("/v2/");
  }

  /** {@code /v2/NAME/rest?query} as {@code /NAME/rest?query}; for a path {@link #under} the prefix. */
  static String unprefixed(String raw) {
    return raw.substring(3);
  }

  /** The answer to {@code GET /v2/}: the API is spoken here. */
  static HttpResponse versionCheck() {
    return HttpResponse.create().withStatus(StatusCodes.OK)
        .withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON, "{}"))
        .addHeader(API_VERSION);
  }

  /** The answer to a push, a delete or an upload. */
  static HttpResponse readOnly() {
    return Answers.text(405, "Corral is a read-only mirror: pushes, deletes and uploads are not accepted")
        .addHeader(RawHeader.create("Allow", "GET, HEAD")).addHeader(API_VERSION);
  }
}
