package dev.corral.http;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.List;
import java.util.Locale;

/** HTTP-date parsing (RFC 9110 5.6.7): IMF-fixdate, and the obsolete RFC 850 and asctime forms. */
final class HttpDate {
  private HttpDate() {}

  // "Sunday, 06-Nov-94 08:49:37 GMT". Two-digit years 70..99 are 19xx, 00..69 are 20xx: close
  // enough to RFC 9110's "more than 50 years in the future" rule for any real validator.
  private static final DateTimeFormatter RFC_850 =
      new DateTimeFormatterBuilder()
          .appendPattern("EEEE, dd-MMM-")
          .appendValueReduced(ChronoField.YEAR, 2, 2, 1970)
          .appendPattern(" HH:mm:ss 'GMT'")
          .toFormatter(Locale.US)
          .withZone(ZoneOffset.UTC);

  // "Sun Nov  6 08:49:37 1994"
  private static final DateTimeFormatter ASCTIME =
      DateTimeFormatter.ofPattern("EEE MMM ppd HH:mm:ss yyyy", Locale.US).withZone(ZoneOffset.UTC);

  private static final List<DateTimeFormatter> FORMATS =
      List.of(DateTimeFormatter.RFC_1123_DATE_TIME, RFC_850, ASCTIME);

  /** The instant, or null when the value is absent or in none of the three forms. */
  static Instant parse(String value) {
    if (value == null) {
      return null;
    }
    String v = value.trim();
    for (DateTimeFormatter format : FORMATS) {
      try {
        return format.parse(v, Instant::from);
      } catch (DateTimeParseException e) {
        // try the next form
      }
    }
    return null;
  }
}
