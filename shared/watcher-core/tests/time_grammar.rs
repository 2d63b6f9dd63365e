//! Properties of the time grammar (semantics.md, "Time"): every instant and duration the
//! contract's grammar allows is read to the value an independent computation gives, prints back
//! to a text that reads the same; every near miss is refused naming what is wrong.

use jiff::civil::DateTime;
use jiff::tz::{Offset, TimeZone};
use jiff::SignedDuration;
use proptest::prelude::*;
use watcher_core::time::{Instant, IsoDuration};

/// The parts of a valid instant text.
#[derive(Debug, Clone)]
struct Parts {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    /// The fraction's digits as written (0 to 9 of them).
    fraction: String,
    t: char,
    /// `None` for `Z`/`z`, else (negative?, hours, minutes).
    offset: Option<(bool, i8, i8)>,
    z: char,
}

impl Parts {
    fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    fn offset_text(&self) -> String {
        match self.offset {
            None => self.z.to_string(),
            Some((neg, h, m)) => format!("{}{h:02}:{m:02}", if neg { '-' } else { '+' }),
        }
    }

    fn fraction_text(&self) -> String {
        if self.fraction.is_empty() {
            String::new()
        } else {
            format!(".{}", self.fraction)
        }
    }

    fn text(&self) -> String {
        format!(
            "{}{}{:02}:{:02}:{:02}{}{}",
            self.date(),
            self.t,
            self.hour,
            self.minute,
            self.second,
            self.fraction_text(),
            self.offset_text()
        )
    }

    fn offset_seconds(&self) -> i32 {
        self.offset.map_or(0, |(neg, h, m)| {
            let s = i32::from(h) * 3600 + i32::from(m) * 60;
            if neg {
                -s
            } else {
                s
            }
        })
    }

    /// The UTC wall time by jiff's civil arithmetic (independent of the parser).
    fn expected_utc(&self) -> DateTime {
        let nanos = format!("{:0<9}", self.fraction).parse::<i32>().unwrap();
        DateTime::new(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            nanos,
        )
        .unwrap()
        .checked_sub(SignedDuration::from_secs(i64::from(self.offset_seconds())))
        .unwrap()
    }
}

fn parts() -> impl Strategy<Value = Parts> {
    (
        1i16..=9999,
        1i8..=12,
        1i8..=31,
        (0i8..24, 0i8..60, 0i8..60),
        "[0-9]{0,9}",
        prop_oneof![Just('T'), Just('t')],
        prop_oneof![
            1 => Just(None),
            3 => (any::<bool>(), 0i8..24, 0i8..60).prop_map(Some),
        ],
        prop_oneof![Just('Z'), Just('z')],
    )
        .prop_map(
            |(year, month, day, (hour, minute, second), fraction, t, offset, z)| {
                let last = jiff::civil::Date::new(year, month, 1)
                    .unwrap()
                    .days_in_month();
                Parts {
                    year,
                    month,
                    day: day.min(last),
                    hour,
                    minute,
                    second,
                    fraction,
                    t,
                    offset,
                    z,
                }
            },
        )
}

/// Near misses of a valid instant, each with a word its refusal must contain.
fn near_misses(p: &Parts, pick: usize, n: u8) -> (String, &'static str) {
    let time = |h: i8| format!("{h:02}:{:02}:{:02}", p.minute, p.second);
    let sign = if p.offset.is_some_and(|o| o.0) {
        '-'
    } else {
        '+'
    };
    let oh = p.offset.map_or(5, |o| o.1);
    let om = p.offset.map_or(0, |o| o.2);
    match pick % 9 {
        0 => (
            format!(
                "{}{}{:02}:{:02}{}",
                p.date(),
                p.t,
                p.hour,
                p.minute,
                p.offset_text()
            ),
            "no seconds",
        ),
        1 => (
            format!(
                "{}{}{},{}{}",
                p.date(),
                p.t,
                time(p.hour),
                if p.fraction.is_empty() {
                    "5"
                } else {
                    &p.fraction
                },
                p.offset_text()
            ),
            "comma",
        ),
        2 => (
            format!(
                "{}{}{}{}{sign}{oh:02}",
                p.date(),
                p.t,
                time(p.hour),
                p.fraction_text()
            ),
            "without minutes",
        ),
        3 => (
            format!(
                "{}{}{}{}{sign}{oh:02}{om:02}",
                p.date(),
                p.t,
                time(p.hour),
                p.fraction_text()
            ),
            "without a colon",
        ),
        4 => (
            format!(
                "{}{}{}{}{sign}{}:{om:02}",
                p.date(),
                p.t,
                time(p.hour),
                p.fraction_text(),
                24 + n % 76
            ),
            "00 to 23",
        ),
        5 => (
            format!(
                "{}{}{}{}{}",
                p.date(),
                p.t,
                time(24),
                p.fraction_text(),
                p.offset_text()
            ),
            "hour 24",
        ),
        6 => (
            format!(
                "{}{}{}.{}{}",
                p.date(),
                p.t,
                time(p.hour),
                "1".repeat(10 + usize::from(n % 6)),
                p.offset_text()
            ),
            "nanosecond",
        ),
        7 => (
            format!(
                "{} {}{}{}",
                p.date(),
                time(p.hour),
                p.fraction_text(),
                p.offset_text()
            ),
            "space",
        ),
        _ => (
            format!("{}{}{}{}", p.date(), p.t, time(p.hour), p.fraction_text()),
            "no offset",
        ),
    }
}

/// One `n[.f]X` component of a generated duration.
#[derive(Debug, Clone)]
struct Component {
    whole: u32,
    fraction: Option<String>,
    unit: char,
}

impl Component {
    fn nanos(&self) -> i128 {
        let unit: i128 = match self.unit {
            'W' => 7 * 86_400,
            'D' => 86_400,
            'H' => 3_600,
            'M' => 60,
            _ => 1,
        } * 1_000_000_000;
        let frac = self.fraction.as_ref().map_or(0, |f| {
            let padded = format!("{f:0<9}").parse::<i128>().unwrap();
            padded * unit / 1_000_000_000
        });
        i128::from(self.whole) * unit + frac
    }
}

/// A valid duration: its components, the decimal mark, and the text.
fn durations() -> impl Strategy<Value = (Vec<Component>, String)> {
    let week = (0u32..500_000, proptest::option::of("[0-9]{1,9}")).prop_map(|(whole, fraction)| {
        vec![Component {
            whole,
            fraction,
            unit: 'W',
        }]
    });
    let mixed = (
        1u8..16,
        (
            0u32..1_000_000,
            0u32..1_000_000,
            0u32..1_000_000,
            0u32..1_000_000,
        ),
        proptest::option::of("[0-9]{1,9}"),
    )
        .prop_map(|(mask, (d, h, m, s), fraction)| {
            let mut out: Vec<Component> = [('D', d), ('H', h), ('M', m), ('S', s)]
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, (unit, whole))| Component {
                    whole: *whole,
                    fraction: None,
                    unit: *unit,
                })
                .collect();
            if let Some(last) = out.last_mut() {
                last.fraction = fraction;
            }
            out
        });
    (prop_oneof![week, mixed], any::<bool>()).prop_map(|(components, comma)| {
        let mark = if comma { ',' } else { '.' };
        let mut text = String::from("P");
        for c in &components {
            if matches!(c.unit, 'H' | 'M' | 'S') && !text.contains('T') {
                text.push('T');
            }
            text.push_str(&c.whole.to_string());
            if let Some(f) = &c.fraction {
                text.push(mark);
                text.push_str(f);
            }
            text.push(c.unit);
        }
        (components, text)
    })
}

/// Near misses of a valid duration, each with a word its refusal must contain.
fn duration_near_misses(components: &[Component], text: &str, pick: usize) -> (String, String) {
    let body = &text[1..];
    match pick % 9 {
        0 => (text.to_lowercase(), "lower-case".into()),
        1 => (format!("-{text}"), "sign".into()),
        2 => (format!("+{text}"), "sign".into()),
        3 => (format!("P0Y{body}"), "years".into()),
        4 => (format!("P0M{body}"), "months".into()),
        5 if components[0].unit == 'W' => (format!("{text}1D"), "weeks".into()),
        5 => (format!("P1W{body}"), "weeks".into()),
        6 => {
            // A fraction on a unit that is not the smallest: add a smaller unit after it.
            match components.last().map(|c| (c.unit, c.fraction.is_some())) {
                Some(('D', true)) => (format!("{text}T1H"), "fraction".into()),
                Some(('H', true)) => (format!("{text}1M"), "fraction".into()),
                Some(('M', true)) => (format!("{text}1S"), "fraction".into()),
                _ => (format!("P{body}T"), "T".into()),
            }
        }
        7 => (format!(" {text}"), "spaces".into()),
        _ => (
            format!("P{}D", 3_652_059 + components.len()),
            "instant range".into(),
        ),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn every_valid_instant_reads_as_utc_and_prints_back(p in parts()) {
        let text = p.text();
        let utc = p.expected_utc();
        if !(1..=9999).contains(&utc.year()) {
            let err = Instant::parse(&text).unwrap_err();
            prop_assert!(err.contains("0001-01-01T00:00:00Z") || err.contains("9999-12-31"), "{text}: {err}");
            return Ok(());
        }
        let t = Instant::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(t.to_civil_utc(), utc, "{}", text);
        // A second independent computation: jiff's fixed-offset zone, where its timestamps reach.
        let offset = Offset::from_seconds(p.offset_seconds()).unwrap();
        let wall = DateTime::new(
            p.year, p.month, p.day, p.hour, p.minute, p.second,
            format!("{:0<9}", p.fraction).parse::<i32>().unwrap(),
        ).unwrap();
        if let Ok(ts) = TimeZone::fixed(offset).to_timestamp(wall) {
            prop_assert_eq!(t.as_nanos(), ts.as_nanosecond(), "{}", text);
        }
        let printed = t.to_string();
        prop_assert!(printed.ends_with('Z') && printed.as_bytes()[10] == b'T', "{}", printed);
        if let Some((_, fraction)) = printed.trim_end_matches('Z').split_once('.') {
            prop_assert!((1..=9).contains(&fraction.len()) && !fraction.ends_with('0'), "{}", printed);
        }
        prop_assert_eq!(Instant::parse(&printed), Ok(t), "{} printed as {}", text, printed);
        prop_assert_eq!(Instant::from_nanos(t.as_nanos()), Ok(t));
    }

    #[test]
    fn every_near_miss_of_an_instant_is_refused_naming_why(p in parts(), pick in 0usize..9, n in any::<u8>()) {
        let (text, why) = near_misses(&p, pick, n);
        match Instant::parse(&text) {
            Ok(t) => prop_assert!(false, "{} was read as {}", text, t),
            Err(e) => prop_assert!(e.contains(why), "{}: {} (expected {:?})", text, e, why),
        }
    }

    #[test]
    fn every_valid_duration_reads_to_its_length((components, text) in durations()) {
        let expected: i128 = components.iter().map(Component::nanos).sum();
        let d = IsoDuration::parse(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(d.as_nanos(), expected, "{}", text);
        prop_assert_eq!(d.as_str(), text.as_str());
    }

    #[test]
    fn every_near_miss_of_a_duration_is_refused_naming_why((components, text) in durations(), pick in 0usize..9) {
        let (miss, why) = duration_near_misses(&components, &text, pick);
        match IsoDuration::parse(&miss) {
            Ok(d) => prop_assert!(false, "{} was read as {} ns", miss, d.as_nanos()),
            Err(e) => prop_assert!(e.contains(&why), "{}: {} (expected {:?})", miss, e, why),
        }
    }
}

#[test]
fn printed_instants_are_whole_seconds_or_trimmed_fractions() {
    for (text, printed) in [
        ("2026-09-10T20:15:00.100000000Z", "2026-09-10T20:15:00.1Z"),
        ("2026-09-10T20:15:00.000000000Z", "2026-09-10T20:15:00Z"),
        (
            "2026-09-10T20:15:00.000000010Z",
            "2026-09-10T20:15:00.00000001Z",
        ),
    ] {
        assert_eq!(Instant::parse(text).unwrap().to_string(), printed);
    }
}
