//! [`Instant`]: a UTC instant in the contract's range, and its RFC 3339 grammar.
//!
//! The parser is written by hand rather than through jiff's `Timestamp` parser: jiff accepts
//! forms the contract refuses (a space for `T`, a comma fraction, `+05` and `+0500` offsets,
//! signed six-digit years) and its `Timestamp` cannot hold the last day of year 9999, which the
//! contract's range includes (`9999-12-31T23:59:59Z` is the common "never"). jiff's civil types
//! still validate dates (no February 30) and do the calendar arithmetic.

use std::fmt;

use jiff::civil::{Date, DateTime};
use jiff::{SignedDuration, Timestamp};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{IsoDuration, RANGE_TEXT};

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_DAY: i128 = 86_400 * NANOS_PER_SECOND;
/// The Unix epoch as a civil date-time read as UTC.
const EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);
/// `0001-01-01T00:00:00Z` in nanoseconds since the Unix epoch.
const MIN_NANOS: i128 = -62_135_596_800 * NANOS_PER_SECOND;
/// `9999-12-31T23:59:59.999999999Z` in nanoseconds since the Unix epoch.
const MAX_NANOS: i128 = 253_402_300_799 * NANOS_PER_SECOND + 999_999_999;
/// An example for reasons.
const EXAMPLE: &str = "2026-09-10T20:15:00Z";

/// A UTC instant with nanosecond precision, from `0001-01-01T00:00:00Z` to
/// `9999-12-31T23:59:59.999999999Z` (semantics.md, "Time").
///
/// Held as nanoseconds since the Unix epoch, so it orders and hashes as time does. Displays and
/// serialises as the contract's output form: UTC with `Z`, whole seconds when the fraction is
/// zero (`2026-09-10T20:15:00Z`), otherwise the fraction with trailing zeros trimmed
/// (`2026-09-10T20:15:00.5Z`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(i128);

impl fmt::Debug for Instant {
    /// `Instant(2026-09-10T20:15:00Z)`: the instant readable in test failures.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Instant({self})")
    }
}

/// What [`Instant::parse_reading`] read: the instant, and whether the text was a leap second.
///
/// A leap second (`23:59:60` UTC) is read as the last nanosecond of its minute; the caller keeps
/// the text as given on the record beside it when `leap_second` is true (semantics.md, "Time").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstantReading {
    /// The UTC instant.
    pub instant: Instant,
    /// The text named second 60 (a leap second), read as `23:59:59.999999999` UTC.
    pub leap_second: bool,
}

impl Instant {
    /// The first instant in range, `0001-01-01T00:00:00Z`.
    pub const MIN: Instant = Instant(MIN_NANOS);
    /// The last instant in range, `9999-12-31T23:59:59.999999999Z`.
    pub const MAX: Instant = Instant(MAX_NANOS);

    /// Parses an RFC 3339 instant exactly as semantics.md "Time" gives it, normalised to UTC.
    ///
    /// # Errors
    /// A reason in a person's words naming what is wrong (no offset, no seconds, a comma
    /// fraction, an offset not `±HH:MM`, a date or time out of range, ...). The caller prefixes
    /// the field name.
    ///
    /// # Example
    /// ```
    /// # use instants::Instant;
    /// let t = Instant::parse("2026-09-10T22:15:00+02:00").unwrap();
    /// assert_eq!(t.to_string(), "2026-09-10T20:15:00Z");
    /// assert!(Instant::parse("2026-09-10 20:15:00Z").unwrap_err().contains("space"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_reading(text).map(|r| r.instant)
    }

    /// Parses an RFC 3339 instant like [`Instant::parse`], also telling whether it was a leap
    /// second (`:60` whose UTC equivalent is `23:59:60`), read as `23:59:59.999999999` UTC.
    ///
    /// Leading or trailing whitespace is refused (docs/interpretation.md).
    ///
    /// # Errors
    /// As [`Instant::parse`]; `:60` at any minute other than 23:59 UTC is refused.
    ///
    /// # Example
    /// ```
    /// # use instants::Instant;
    /// let r = Instant::parse_reading("2017-01-01T00:59:60+01:00").unwrap();
    /// assert!(r.leap_second);
    /// assert_eq!(r.instant.to_string(), "2016-12-31T23:59:59.999999999Z");
    /// ```
    pub fn parse_reading(text: &str) -> Result<InstantReading, String> {
        let fields = Fields::read(text)?;
        fields.resolve(text)
    }

    /// Whether this is a zero value standing for "unset": exactly `0001-01-01T00:00:00Z` or
    /// `1970-01-01T00:00:00Z` (semantics.md, "Time": treated as a missing timestamp).
    pub fn is_zero_value(self) -> bool {
        self.0 == MIN_NANOS || self.0 == 0
    }

    /// Whole nanoseconds since `1970-01-01T00:00:00Z` (negative before it); a sort key.
    pub fn as_nanos(self) -> i128 {
        self.0
    }

    /// Whole seconds since `1970-01-01T00:00:00Z`, rounded down (an epoch-seconds TTL).
    pub fn as_second(self) -> i64 {
        // In range: |seconds| < 2.6e11 fits an i64.
        self.0.div_euclid(NANOS_PER_SECOND) as i64
    }

    /// The instant `nanos` nanoseconds after the Unix epoch.
    ///
    /// # Errors
    /// When the instant is outside `0001-01-01T00:00:00Z` to `9999-12-31T23:59:59.999999999Z`.
    pub fn from_nanos(nanos: i128) -> Result<Self, String> {
        if (MIN_NANOS..=MAX_NANOS).contains(&nanos) {
            Ok(Instant(nanos))
        } else {
            Err(format!(
                "{nanos} ns from the Unix epoch is outside the instant range {RANGE_TEXT}"
            ))
        }
    }

    /// The instant of a jiff timestamp, `None` before `0001-01-01T00:00:00Z`.
    pub fn from_timestamp(t: Timestamp) -> Option<Self> {
        Self::from_nanos(t.as_nanosecond()).ok()
    }

    /// This instant as a jiff timestamp; `None` after `9999-12-30T22:00:00.999999999Z`, the last
    /// instant jiff's `Timestamp` holds.
    pub fn timestamp(self) -> Option<Timestamp> {
        Timestamp::from_nanosecond(self.0).ok()
    }

    /// The UTC wall-clock date and time of this instant (years 1 to 9999).
    pub fn to_civil_utc(self) -> DateTime {
        let secs = self.0.div_euclid(NANOS_PER_SECOND) as i64;
        let sub = self.0.rem_euclid(NANOS_PER_SECOND) as i32;
        EPOCH
            .checked_add(SignedDuration::new(secs, sub))
            .expect("every instant in range is a civil date-time")
    }

    /// This instant plus a duration, `None` past [`Instant::MAX`].
    pub fn checked_plus(self, d: &IsoDuration) -> Option<Instant> {
        self.0
            .checked_add(d.as_nanos())
            .and_then(|n| Self::from_nanos(n).ok())
    }

    /// This instant plus a duration, saturating at [`Instant::MAX`].
    pub fn plus(self, d: IsoDuration) -> Instant {
        self.checked_plus(&d).unwrap_or(Instant::MAX)
    }

    /// This instant moved by a signed duration, `None` outside the range.
    pub fn checked_add(self, d: SignedDuration) -> Option<Instant> {
        self.0
            .checked_add(d.as_nanos())
            .and_then(|n| Self::from_nanos(n).ok())
    }

    /// This instant moved back by a signed duration, `None` outside the range.
    pub fn checked_sub(self, d: SignedDuration) -> Option<Instant> {
        self.0
            .checked_sub(d.as_nanos())
            .and_then(|n| Self::from_nanos(n).ok())
    }
}

/// The fields of an instant as written, checked for shape but not yet for range.
struct Fields {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    nanos: i32,
    /// The offset east of UTC, in minutes.
    offset_minutes: i32,
}

impl Fields {
    /// Reads the shape `YYYY-MM-DDTHH:MM:SS[.f]Z|±HH:MM`, naming the first thing wrong.
    fn read(text: &str) -> Result<Fields, String> {
        let shape = || format!("expected an RFC 3339 instant such as {EXAMPLE}");
        if text.is_empty() {
            return Err(format!("is empty; {}", shape()));
        }
        if text.trim() != text {
            return Err(format!(
                "{text:?} has spaces around it; {} with nothing before or after",
                shape()
            ));
        }
        let b = text.as_bytes();
        let digits_at = |range: std::ops::Range<usize>| {
            b.get(range)
                .filter(|s| s.iter().all(u8::is_ascii_digit))
                .map(|s| s.iter().fold(0i32, |n, d| n * 10 + i32::from(d - b'0')))
        };
        let date_ok = b.len() >= 10 && b[4] == b'-' && b[7] == b'-';
        let (Some(year), Some(month), Some(day), true) =
            (digits_at(0..4), digits_at(5..7), digits_at(8..10), date_ok)
        else {
            return Err(format!(
                "{text:?} does not start with a date YYYY-MM-DD; {}",
                shape()
            ));
        };
        match b.get(10) {
            Some(b'T' | b't') => {}
            Some(b' ') => {
                return Err(format!(
                "{text:?} has a space between the date and the time; RFC 3339 needs T ({EXAMPLE})"
            ))
            }
            None => return Err(format!("{text:?} has a date but no time; {}", shape())),
            Some(_) => {
                return Err(format!(
                    "{text:?} needs T between the date and the time; {}",
                    shape()
                ))
            }
        }
        let (Some(hour), Some(minute), Some(b':')) =
            (digits_at(11..13), digits_at(14..16), b.get(13))
        else {
            return Err(format!(
                "{text:?} does not have a time HH:MM:SS after T; {}",
                shape()
            ));
        };
        let second = match (b.get(16), digits_at(17..19)) {
            (Some(b':'), Some(s)) => s,
            (None | Some(b'Z' | b'z' | b'+' | b'-' | b'.'), _) => {
                return Err(format!(
                    "{text:?} has no seconds; RFC 3339 needs HH:MM:SS ({EXAMPLE})"
                ))
            }
            _ => {
                return Err(format!(
                    "{text:?} does not have a time HH:MM:SS after T; {}",
                    shape()
                ))
            }
        };
        let mut pos = 19;
        let mut nanos = 0i32;
        match b.get(pos) {
            Some(b'.') => {
                let count = b[pos + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
                if count == 0 {
                    return Err(format!(
                        "{text:?} has a dot with no digits after it; write the fraction of a second as .5 or leave it out"
                    ));
                }
                if count > 9 {
                    return Err(format!(
                        "{text:?} has {count} fractional digits; the watcher keeps nanosecond precision, at most 9 digits"
                    ));
                }
                let frac = digits_at(pos + 1..pos + 1 + count).unwrap_or(0);
                nanos = frac * 10i32.pow(9 - count as u32);
                pos += 1 + count;
            }
            Some(b',') => {
                return Err(format!(
                    "{text:?} has a comma before the fraction of a second; RFC 3339 needs a dot ({}.5Z)",
                    &EXAMPLE[..19]
                ))
            }
            _ => {}
        }
        let offset_minutes = Self::offset(text, &text[pos..])?;
        Ok(Fields {
            year: year as i16,
            month: month as i8,
            day: day as i8,
            hour: hour as i8,
            minute: minute as i8,
            second: second as i8,
            nanos,
            offset_minutes,
        })
    }

    /// Reads the offset `Z`, `z` or `±HH:MM` (hours 00 to 23, minutes 00 to 59), in minutes
    /// east of UTC.
    fn offset(text: &str, rest: &str) -> Result<i32, String> {
        let b = rest.as_bytes();
        let num = |s: &[u8]| -> Option<i32> {
            s.iter()
                .all(u8::is_ascii_digit)
                .then(|| s.iter().fold(0i32, |n, d| n * 10 + i32::from(d - b'0')))
        };
        match b {
            [] => Err(format!(
                "{text:?} has no offset; add Z for UTC or ±HH:MM ({EXAMPLE}, 2026-09-10T22:15:00+02:00)"
            )),
            [b'Z' | b'z'] => Ok(0),
            [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
                let (Some(h), Some(m)) = (num(&[*h1, *h2]), num(&[*m1, *m2])) else {
                    return Err(format!(
                        "{text:?} has offset {rest:?}; an offset is Z or ±HH:MM such as +05:00"
                    ));
                };
                if h > 23 {
                    return Err(format!(
                        "{text:?} has offset {rest:?}; offset hours must be 00 to 23"
                    ));
                }
                if m > 59 {
                    return Err(format!(
                        "{text:?} has offset {rest:?}; offset minutes must be 00 to 59"
                    ));
                }
                let minutes = h * 60 + m;
                Ok(if *sign == b'-' { -minutes } else { minutes })
            }
            [b'+' | b'-', h @ ..] if h.len() == 2 && num(h).is_some() => Err(format!(
                "{text:?} has offset {rest:?} without minutes; write ±HH:MM such as {rest}:00"
            )),
            [b'+' | b'-', h @ ..] if h.len() == 4 && num(h).is_some() => Err(format!(
                "{text:?} has offset {rest:?} without a colon; write ±HH:MM such as {}:{}",
                &rest[..3],
                &rest[3..]
            )),
            [b'+' | b'-', ..] => Err(format!(
                "{text:?} has offset {rest:?}; an offset is Z or ±HH:MM such as +05:00"
            )),
            _ => Err(format!(
                "{text:?} has {rest:?} where the offset should be; end with Z for UTC or ±HH:MM"
            )),
        }
    }

    /// Checks the date and time are real and in range, and normalises to UTC.
    fn resolve(&self, text: &str) -> Result<InstantReading, String> {
        if !(1..=12).contains(&self.month) {
            return Err(format!(
                "{text:?} has month {:02}; months are 01 to 12",
                self.month
            ));
        }
        let first = Date::new(self.year, self.month, 1)
            .map_err(|e| format!("{text:?} does not name a real date ({e})"))?;
        let days = first.days_in_month();
        if !(1..=days).contains(&self.day) {
            return Err(format!(
                "{text:?} has day {:02}; {:04}-{:02} has days 01 to {days}",
                self.day, self.year, self.month
            ));
        }
        if self.hour == 24 {
            return Err(format!(
                "{text:?} has hour 24; hours are 00 to 23 (write 00:00:00 of the next day)"
            ));
        }
        if self.hour > 23 {
            return Err(format!(
                "{text:?} has hour {}; hours are 00 to 23",
                self.hour
            ));
        }
        if self.minute > 59 {
            return Err(format!(
                "{text:?} has minute {}; minutes are 00 to 59",
                self.minute
            ));
        }
        if self.second > 60 {
            return Err(format!(
                "{text:?} has second {}; seconds are 00 to 59 (60 only for a leap second)",
                self.second
            ));
        }
        let leap_second = self.second == 60;
        let wall = DateTime::new(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            if leap_second { 59 } else { self.second },
            if leap_second { 0 } else { self.nanos },
        )
        .map_err(|e| format!("{text:?} does not name a real date and time ({e})"))?;
        let local = wall.duration_since(EPOCH).as_nanos();
        let mut utc = local - i128::from(self.offset_minutes) * 60 * NANOS_PER_SECOND;
        if leap_second {
            if utc.rem_euclid(NANOS_PER_DAY) != NANOS_PER_DAY - NANOS_PER_SECOND {
                return Err(format!(
                    "{text:?} has second 60, a leap second, which only exists at 23:59:60 UTC"
                ));
            }
            utc += NANOS_PER_SECOND - 1;
        }
        if utc < MIN_NANOS {
            return Err(format!(
                "{text:?} is before 0001-01-01T00:00:00Z in UTC; instants run from {RANGE_TEXT}"
            ));
        }
        if utc > MAX_NANOS {
            return Err(format!(
                "{text:?} is after 9999-12-31T23:59:59.999999999Z in UTC; instants run from {RANGE_TEXT}"
            ));
        }
        Ok(InstantReading {
            instant: Instant(utc),
            leap_second,
        })
    }
}

impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.to_civil_utc();
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            c.year(),
            c.month(),
            c.day(),
            c.hour(),
            c.minute(),
            c.second()
        )?;
        let sub = c.subsec_nanosecond();
        if sub != 0 {
            let digits = format!("{sub:09}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        f.write_str("Z")
    }
}

/// An RFC 3339 `date-time` with an offset (semantics.md "Time").
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Instant {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Instant".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})$",
            "description": "An RFC 3339 date-time with an offset (Z or ±HH:MM), 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z; the watcher writes UTC with Z"
        })
    }
}

impl Serialize for Instant {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Instant {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Instant::parse(&text).map_err(serde::de::Error::custom)
    }
}
