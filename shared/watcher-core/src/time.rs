//! Instants and durations as the watcher reads and writes them (semantics.md, "Time").
//!
//! * Instants are RFC 3339. Input must carry an offset (`Z` or `+02:00`); it is normalised to UTC.
//!   Output is UTC with `Z`, whole seconds when the fraction is zero, otherwise the fraction as
//!   given with trailing zeros trimmed — exactly jiff's `Timestamp` display form.
//! * Durations are ISO 8601 with fixed-length units only: weeks (7 × 24 h), days (24 h), hours,
//!   minutes and (fractional) seconds. Years, months and negative durations are refused.

use std::fmt;

use jiff::{SignedDuration, Span, Timestamp};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A UTC instant (nanosecond precision), parsed from RFC 3339 with a mandatory offset.
///
/// Serialises as the contract's output form, e.g. `2026-09-10T20:15:00Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(Timestamp);

impl Instant {
    /// Parses an RFC 3339 instant. Offsets other than `Z` are normalised to UTC.
    ///
    /// # Errors
    /// A reason in a person's words when the text is not an RFC 3339 instant or has no offset.
    ///
    /// # Example
    /// ```
    /// # use watcher_core::time::Instant;
    /// let t = Instant::parse("2026-09-10T22:15:00+02:00").unwrap();
    /// assert_eq!(t.to_string(), "2026-09-10T20:15:00Z");
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(
                "is empty; expected an RFC 3339 instant such as 2026-09-10T20:15:00Z".into(),
            );
        }
        // jiff accepts `T` or a space; RFC 3339 also allows lower-case `t`/`z`.
        trimmed
            .parse::<Timestamp>()
            .map(Instant)
            .map_err(|e| format!("{trimmed:?} is not an RFC 3339 instant with an offset ({e})"))
    }

    /// `true` for the zero values agents send for an unset time: `0001-01-01T00:00:00Z` and
    /// `1970-01-01T00:00:00Z` (semantics.md "Time": read as absent).
    pub fn is_zero_value(self) -> bool {
        let text = self.to_string();
        text == "0001-01-01T00:00:00Z" || text == "1970-01-01T00:00:00Z"
    }

    /// Wraps a jiff timestamp.
    pub fn from_timestamp(t: Timestamp) -> Self {
        Instant(t)
    }

    /// The underlying jiff timestamp.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }

    /// This instant plus a non-negative duration, saturating at the end of jiff's range.
    pub fn plus(self, d: IsoDuration) -> Instant {
        Instant(self.0.checked_add(d.as_signed()).unwrap_or(Timestamp::MAX))
    }

    /// Whole nanoseconds since the Unix epoch (for store sort keys).
    pub fn as_nanos(self) -> i128 {
        self.0.as_nanosecond()
    }

    /// The instant `nanos` nanoseconds after the Unix epoch.
    ///
    /// # Errors
    /// When `nanos` is outside jiff's supported range (years -9999..=9999).
    pub fn from_nanos(nanos: i128) -> Result<Self, String> {
        Timestamp::from_nanosecond(nanos)
            .map(Instant)
            .map_err(|e| format!("{nanos} is not a representable instant ({e})"))
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl Serialize for Instant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Instant::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// `true` when `text`, an instant that parsed, is a leap second (`:60` in the seconds field), which
/// is read as the last nanosecond of its minute and kept as given beside it (semantics.md "Time").
pub fn is_leap_second_text(text: &str) -> bool {
    text.get(17..19) == Some("60")
}

/// A non-negative ISO 8601 duration of fixed length, keeping the text it was written as.
///
/// `P1D` is 24 hours and `P1W` 7 days (semantics.md, "Time"). The original text is what the
/// record shows back (`"grace": "PT2H"`); the length is what the rules compute with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IsoDuration {
    text: String,
    nanos: i128,
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;

impl IsoDuration {
    /// Parses an ISO 8601 duration such as `PT2H`, `PT1H45M`, `P2D`, `P1W` or `PT0.5S`.
    ///
    /// # Errors
    /// A reason naming the rule: not ISO 8601, negative, or using years or months (which have no
    /// fixed length).
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        // ISO 8601 only: `str::parse` would also take jiff's "friendly" form ("2 hours").
        let span: Span = jiff::fmt::temporal::SpanParser::new()
            .parse_span(trimmed)
            .map_err(|e| {
                format!("{trimmed:?} is not an ISO 8601 duration such as PT2H or P1D ({e})")
            })?;
        if span.signum() < 0 {
            return Err(format!(
                "{trimmed:?} is negative; durations must not be negative"
            ));
        }
        if span.get_years() != 0 || span.get_months() != 0 {
            return Err(format!(
                "{trimmed:?} uses years or months, which have no fixed length; use days (P30D) or hours"
            ));
        }
        // Converted by hand rather than through jiff's calendar arithmetic: the contract fixes a day
        // at 24 hours and a week at 7 days regardless of any time zone.
        let nanos = i128::from(span.get_weeks()) * 7 * 86_400 * NANOS_PER_SECOND
            + i128::from(span.get_days()) * 86_400 * NANOS_PER_SECOND
            + i128::from(span.get_hours()) * 3_600 * NANOS_PER_SECOND
            + i128::from(span.get_minutes()) * 60 * NANOS_PER_SECOND
            + i128::from(span.get_seconds()) * NANOS_PER_SECOND
            + i128::from(span.get_milliseconds()) * 1_000_000
            + i128::from(span.get_microseconds()) * 1_000
            + i128::from(span.get_nanoseconds());
        Ok(IsoDuration {
            text: trimmed.to_string(),
            nanos,
        })
    }

    /// The zero duration, written `PT0S`.
    pub fn zero() -> Self {
        IsoDuration {
            text: "PT0S".into(),
            nanos: 0,
        }
    }

    /// The text as written by the agent.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The length as a jiff signed duration (never negative).
    pub fn as_signed(&self) -> SignedDuration {
        let secs = (self.nanos / NANOS_PER_SECOND).min(i128::from(i64::MAX)) as i64;
        let sub = (self.nanos % NANOS_PER_SECOND) as i32;
        SignedDuration::new(secs, sub)
    }

    /// The length in nanoseconds.
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }
}

impl fmt::Display for IsoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for IsoDuration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for IsoDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        IsoDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_normalise_to_utc_and_trim_fractions() {
        let cases = [
            ("2026-09-10T20:15:00Z", "2026-09-10T20:15:00Z"),
            ("2026-09-10T22:15:00+02:00", "2026-09-10T20:15:00Z"),
            ("2026-09-10T20:15:00.500Z", "2026-09-10T20:15:00.5Z"),
            ("2026-09-10T20:15:00.000Z", "2026-09-10T20:15:00Z"),
            ("2026-09-10T20:15:00.123456Z", "2026-09-10T20:15:00.123456Z"),
        ];
        for (input, output) in cases {
            assert_eq!(
                Instant::parse(input).unwrap().to_string(),
                output,
                "{input}"
            );
        }
    }

    #[test]
    fn instants_without_offset_are_refused() {
        let err = Instant::parse("2026-09-10T20:15:00").unwrap_err();
        assert!(err.contains("offset"), "{err}");
        assert!(Instant::parse("").is_err());
        assert!(Instant::parse("tomorrow").is_err());
    }

    #[test]
    fn durations_have_fixed_lengths() {
        let hour = 3_600 * NANOS_PER_SECOND;
        let cases = [
            ("PT2H", 2 * hour),
            ("PT1H45M", hour + 45 * 60 * NANOS_PER_SECOND),
            ("P2D", 48 * hour),
            ("P1W", 7 * 24 * hour),
            ("PT0.5S", NANOS_PER_SECOND / 2),
            ("P1DT2H", 26 * hour),
        ];
        for (text, nanos) in cases {
            let d = IsoDuration::parse(text).unwrap();
            assert_eq!(d.as_nanos(), nanos, "{text}");
            assert_eq!(d.as_str(), text);
        }
    }

    #[test]
    fn months_years_and_negative_durations_are_refused() {
        assert!(IsoDuration::parse("P1M").unwrap_err().contains("months"));
        assert!(IsoDuration::parse("P1Y").unwrap_err().contains("years"));
        assert!(IsoDuration::parse("-PT1H")
            .unwrap_err()
            .contains("negative"));
        assert!(IsoDuration::parse("two hours").is_err());
        assert!(
            IsoDuration::parse("2 hours").is_err(),
            "jiff's friendly form is not ISO 8601"
        );
        assert!(IsoDuration::parse("2h").is_err());
    }

    #[test]
    fn plus_adds_the_fixed_length() {
        let t = Instant::parse("2026-09-11T02:41:00Z").unwrap();
        let d = IsoDuration::parse("PT1H45M").unwrap();
        assert_eq!(t.plus(d).to_string(), "2026-09-11T04:26:00Z");
    }
}
