//! [`IsoDuration`]: the contract's ISO 8601 duration subset.
//!
//! Written by hand rather than with jiff's ISO 8601 span parser: jiff accepts what the contract
//! refuses (lower-case designators, a sign, `W` beside days, fractions on a unit that is not the
//! smallest, years and months of zero length) and reads a day as a calendar day, where the
//! contract fixes it at 24 hours.

use std::fmt;

use jiff::SignedDuration;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Instant, RANGE_TEXT};

const NANOS_PER_SECOND: i128 = 1_000_000_000;
/// An example for reasons.
const EXAMPLES: &str = "PT2H, PT1H45M, P2D, P1W or PT0.5S";

/// A non-negative ISO 8601 duration of fixed length, keeping the text it was written as.
///
/// Grammar (semantics.md, "Time"): `PnW`, or `PnD`, `PTnH`, `PTnM`, `PTnS` and their
/// combinations in that order (`P1DT2H30M`); designators upper case; a fraction (dot or comma, at
/// most 9 digits) on the smallest unit given only. `P1D` is 24 hours and `P1W` 7 days. The
/// original text is what the record shows back (`"grace": "PT2H"`); the length in nanoseconds
/// is what the rules compute with. No duration is longer than the instant range.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IsoDuration {
    text: String,
    nanos: i128,
}

/// One unit designator of the grammar, in the order the units must appear.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Unit {
    Week,
    Day,
    Hour,
    Minute,
    Second,
}

impl Unit {
    fn nanos(self) -> i128 {
        NANOS_PER_SECOND
            * match self {
                Unit::Week => 7 * 86_400,
                Unit::Day => 86_400,
                Unit::Hour => 3_600,
                Unit::Minute => 60,
                Unit::Second => 1,
            }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Week => "weeks (W)",
            Unit::Day => "days (D)",
            Unit::Hour => "hours (H)",
            Unit::Minute => "minutes (M)",
            Unit::Second => "seconds (S)",
        }
    }
}

/// One `n[.f]X` component as written.
struct Component {
    unit: Unit,
    whole: i128,
    /// The fraction's digits and their count (at most 9), when there is one.
    fraction: Option<(i128, u32)>,
}

impl IsoDuration {
    /// Parses a duration such as `PT2H`, `PT1H45M`, `P2D`, `P1W`, `PT0S` or `PT0.5S`.
    ///
    /// Leading or trailing whitespace is refused (docs/interpretation.md).
    ///
    /// # Errors
    /// A reason in a person's words naming what is wrong: years or months (no fixed length, even
    /// when zero), a sign, lower-case designators, `W` with other units, an empty `P` or `PT`, `T`
    /// with nothing after it, units out of order, a fraction on a unit that is not the smallest,
    /// or a length beyond the instant range. The caller prefixes the field name.
    ///
    /// # Example
    /// ```
    /// # use instants::IsoDuration;
    /// assert_eq!(IsoDuration::parse("PT1,5H").unwrap().as_nanos(), 5_400_000_000_000);
    /// assert!(IsoDuration::parse("P1M").unwrap_err().contains("months"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let components = read(text)?;
        let too_large = || {
            format!(
                "{text:?} is longer than the whole instant range ({RANGE_TEXT}); no deadline could be that far out"
            )
        };
        let mut nanos: i128 = 0;
        for c in &components {
            let unit = c.unit.nanos();
            let whole = c.whole.checked_mul(unit).ok_or_else(too_large)?;
            // Exact: every unit is a whole number of seconds and a fraction has at most 9 digits.
            let part = c
                .fraction
                .map_or(0, |(digits, count)| digits * unit / 10i128.pow(count));
            nanos = nanos
                .checked_add(whole)
                .and_then(|n| n.checked_add(part))
                .ok_or_else(too_large)?;
        }
        if nanos > Instant::MAX.as_nanos() - Instant::MIN.as_nanos() {
            return Err(too_large());
        }
        Ok(IsoDuration {
            text: text.to_owned(),
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
        let secs = (self.nanos / NANOS_PER_SECOND) as i64;
        let sub = (self.nanos % NANOS_PER_SECOND) as i32;
        SignedDuration::new(secs, sub)
    }

    /// The length in nanoseconds (never negative).
    pub fn as_nanos(&self) -> i128 {
        self.nanos
    }
}

/// Reads the components of `text`, naming the first thing wrong.
fn read(text: &str) -> Result<Vec<Component>, String> {
    let expected = || format!("expected an ISO 8601 duration such as {EXAMPLES}");
    if text.is_empty() {
        return Err(format!("is empty; {}", expected()));
    }
    if text.trim() != text {
        return Err(format!(
            "{text:?} has spaces around it; {} with nothing before or after",
            expected()
        ));
    }
    if text.starts_with(['-', '+']) {
        return Err(format!(
            "{text:?} has a sign; durations are never negative and are written without one (PT1H)"
        ));
    }
    let Some(body) = text.strip_prefix(['P', 'p']) else {
        return Err(format!("{text:?} does not start with P; {}", expected()));
    };
    if text.bytes().any(|b| b.is_ascii_lowercase()) {
        return Err(format!(
            "{text:?} has lower-case letters; designators are upper case ({})",
            text.to_ascii_uppercase()
        ));
    }
    if body.is_empty() || body == "T" {
        return Err(format!(
            "{text:?} is an empty duration; give at least one number and unit, such as PT0S"
        ));
    }
    let b = body.as_bytes();
    let mut pos = 0;
    let mut in_time = false;
    let mut out: Vec<Component> = Vec::new();
    while pos < b.len() {
        if b[pos] == b'T' {
            if in_time {
                return Err(format!("{text:?} has T twice; T comes once, before hours"));
            }
            in_time = true;
            pos += 1;
            if pos == b.len() {
                return Err(format!(
                    "{text:?} has T with nothing after it; write hours, minutes or seconds after T (PT1H), or drop the T"
                ));
            }
            continue;
        }
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        let whole_digits = &body[start..pos];
        let mut fraction = None;
        if pos < b.len() && matches!(b[pos], b'.' | b',') {
            pos += 1;
            let f_start = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            let count = pos - f_start;
            if count == 0 {
                return Err(format!(
                    "{text:?} has a decimal mark with no digits after it (write PT0.5S)"
                ));
            }
            if count > 9 {
                return Err(format!(
                    "{text:?} has a fraction of {count} digits; at most 9 (nanoseconds)"
                ));
            }
            let digits = body[f_start..pos].parse::<i128>().unwrap_or(0);
            fraction = Some((digits, count as u32));
        }
        let Some(&designator) = b.get(pos) else {
            return Err(format!(
                "{text:?} ends with a number and no unit; add a designator (W, D, H, M or S)"
            ));
        };
        if whole_digits.is_empty() {
            return Err(format!(
                "{text:?} has {:?} with no number before it; write a number then the unit (PT2H)",
                char::from(designator)
            ));
        }
        pos += 1;
        let unit = match (in_time, designator) {
            (false, b'Y') => {
                return Err(format!(
                    "{text:?} uses years, which have no fixed length; use days (P365D) or weeks"
                ))
            }
            (false, b'M') => {
                return Err(format!(
                    "{text:?} uses months, which have no fixed length; use days (P30D) or weeks (for minutes write PT{whole_digits}M)"
                ))
            }
            (false, b'W') => Unit::Week,
            (false, b'D') => Unit::Day,
            (true, b'H') => Unit::Hour,
            (true, b'M') => Unit::Minute,
            (true, b'S') => Unit::Second,
            (false, b'H' | b'S') => {
                return Err(format!(
                    "{text:?} has hours or seconds before T; they go after it (PT{whole_digits}{})",
                    char::from(designator)
                ))
            }
            (true, b'D' | b'W' | b'Y') => {
                return Err(format!(
                    "{text:?} has {} after T; years, weeks and days go before T (P{whole_digits}{})",
                    char::from(designator),
                    char::from(designator)
                ))
            }
            _ => {
                return Err(format!(
                    "{text:?} has {:?} where a unit designator (W, D, H, M or S) should be; {}",
                    char::from(designator),
                    expected()
                ))
            }
        };
        if let Some(prev) = out.last() {
            if prev.unit == Unit::Week || unit == Unit::Week {
                return Err(format!(
                    "{text:?} combines weeks with other units; write weeks alone (P1W) or use days (P8D)"
                ));
            }
            if prev.unit >= unit {
                return Err(format!(
                    "{text:?} has {} after {}; units come once each in the order D, T, H, M, S",
                    unit.name(),
                    prev.unit.name()
                ));
            }
            if prev.fraction.is_some() {
                return Err(format!(
                    "{text:?} has a fraction on {}, which is not the smallest unit given; only the last unit may have a fraction",
                    prev.unit.name()
                ));
            }
        }
        // Leading zeros are allowed; a number too long for i128 is certainly beyond the range.
        let whole = whole_digits.trim_start_matches('0');
        let whole = if whole.is_empty() {
            0
        } else if whole.len() > 30 {
            i128::MAX
        } else {
            whole.parse::<i128>().unwrap_or(i128::MAX)
        };
        out.push(Component {
            unit,
            whole,
            fraction,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{text:?} is an empty duration; give at least one number and unit, such as PT0S"
        ));
    }
    Ok(out)
}

impl fmt::Display for IsoDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The ISO 8601 duration subset (semantics.md "Time").
#[cfg(feature = "schema")]
impl schemars::JsonSchema for IsoDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IsoDuration".into()
    }
    fn inline_schema() -> bool {
        true
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^P(?:[0-9]+(?:[.,][0-9]{1,9})?W|(?=[0-9]|T[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?D)?(?:T(?=[0-9])(?:[0-9]+(?:[.,][0-9]{1,9})?H)?(?:[0-9]+(?:[.,][0-9]{1,9})?M)?(?:[0-9]+(?:[.,][0-9]{1,9})?S)?)?)$",
            "description": "A non-negative ISO 8601 duration of fixed length: PnW, or PnD, PTnH, PTnM, PTnS and their combinations in that order; a day is 24 hours, a week 7 days; a fraction only on the smallest unit given"
        })
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
