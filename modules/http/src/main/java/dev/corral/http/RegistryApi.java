package dev.corral.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.corral.registry.oci.OciRepository;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
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

  private static final ObjectMapper JSON = new ObjectMapper();

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

  /**
   * An error Corral made itself (a one-line text body) in the OCI Distribution API's form, which
   * container clients show their users: {@code {"errors":[{"code":...,"message":...}]}} with the
   * spec's code for the status and the kind of path; the status, the message and every header
   * stay. Anything else (a success, an upstream's own error body) is returned as it is.
   */
  static HttpResponse asRegistryError(HttpResponse response, String path) {
    int status = response.status().intValue();
    if (status < 400 || !(response.entity() instanceof HttpEntity.Strict strict)
        || !strict.getContentType().equals(ContentTypes.TEXT_PLAIN_UTF8)) {
      return response;
    }
    String message = strict.getData().utf8String().trim();
    Map<String, Object> error = new LinkedHashMap<>();
    error.put("code", code(status, path, message));
    error.put("message", message);
    error.put("detail", null);
    try {
      return response.withEntity(HttpEntities.create(ContentTypes.APPLICATION_JSON,
          JSON.writeValueAsBytes(Map.of("errors", List.of(error)))));
    } catch (JsonProcessingException e) {
      return response; // a map of strings always writes
    }
  }

  /** The OCI error code for a status on a path (distribution-spec, "Error Codes"). */
  static String code(int status, String path, String message) {
    return switch (status) {
      case 400 -> message.contains("digest") ? "DIGEST_INVALID"
          : message.contains("image name") || message.contains("path") ? "NAME_INVALID"
          : message.contains("tag") ? "TAG_INVALID" : "UNSUPPORTED";
      case 401 -> "UNAUTHORIZED";
      case 403 -> "DENIED";
      case 404, 410 -> path.contains("/manifests/") ? "MANIFEST_UNKNOWN"
          : path.contains("/blobs/") ? "BLOB_UNKNOWN" : "NAME_UNKNOWN";
      case 405 -> "UNSUPPORTED";
      case 429 -> "TOOMANYREQUESTS";
      default -> "UNKNOWN";
    };
  }


  /** The answer to a push, a delete or an upload. */
  static HttpResponse readOnly() {
    return Answers.text(405, "Corral is a read-only mirror: pushes, deletes and uploads are not accepted")
        .addHeader(RawHeader.create("Allow", "GET, HEAD")).addHeader(API_VERSION);
  }
}
