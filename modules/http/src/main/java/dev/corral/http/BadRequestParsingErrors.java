package dev.corral.http;

import org.apache.pekko.event.LoggingAdapter;
import org.apache.pekko.http.ParsingErrorHandler;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.scaladsl.model.ErrorInfo;
import org.apache.pekko.http.scaladsl.model.StatusCode;
import org.apache.pekko.http.scaladsl.settings.ServerSettings;

/**
 * Answers requests that Pekko HTTP cannot even parse (over-long request targets or headers,
 * illegal characters) with a 400 and a one-line reason, as Corral answers every bad input.
 * Configured as {@code pekko.http.server.parsing.error-handler}.
 */
public final class BadRequestParsingErrors extends ParsingErrorHandler {
  @Override
  public HttpResponse handle(StatusCode status, ErrorInfo error, LoggingAdapter log, ServerSettings settings) {
    int code = status.intValue();
    int answer = code == 414 || code == 431 ? 400 : code;
    String reason = error.summary().replaceAll("[\\r\\n]+", " ");
    log.debug("unparseable request answered {}: {}", answer, reason);
    return HttpResponse.create()
        .withStatus(StatusCodes.get(answer))
        .withEntity(HttpEntities.create(ContentTypes.TEXT_PLAIN_UTF8, reason + "\n"));
  }
}
