//! Instants and durations as the watcher and the Learnables authority read and write them
//! (semantics.md, "Time"): one grammar, one range and one leap-second rule for every instant in
//! every route, field, query parameter, webhook mapping and command-line flag.
//!
//! * Instants are RFC 3339 `date-time` exactly: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1
//!   to 9 digits after a dot, and an offset `Z` or `±HH:MM` (lower-case `t`/`z` accepted). They
//!   are normalised to UTC and must lie between [`Instant::MIN`] (`0001-01-01T00:00:00Z`) and
//!   [`Instant::MAX`] (`9999-12-31T23:59:59.999999999Z`). A leap second (`23:59:60` UTC) is the
//!   last nanosecond of its minute. Output is UTC with `Z`, whole seconds when the fraction is
//!   zero, otherwise the fraction with trailing zeros trimmed.
//! * Durations are the ISO 8601 subset `PnW`, or `PnD`, `PTnH`, `PTnM`, `PTnS` and their
//!   combinations in that order, with fixed-length units only: a week is 7 × 24 h, a day 24 h.
//!
//! Every instant and duration the workspace reads goes through [`Instant::parse`] /
//! [`Instant::parse_reading`] and [`IsoDuration::parse`] (or their serde `Deserialize`, which
//! call them); nothing else in the workspace parses either. `watcher_core::time` re-exports
//! them; the `learnables` crate uses them directly, so it need not depend on the watcher.

mod duration;
mod instant;

pub use duration::IsoDuration;
pub use instant::{Instant, InstantReading};

/// The instant range in words, for reasons that name it:
/// `0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z`.
pub const RANGE_TEXT: &str = "0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z";

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i128 = 1_000_000_000;
    const HOUR: i128 = 3_600 * SECOND;

    fn ok(text: &str) -> String {
        Instant::parse(text)
            .unwrap_or_else(|e| panic!("{text} should parse: {e}"))
            .to_string()
    }

    #[test]
    fn instants_normalise_to_utc_and_trim_fractions() {
        let cases = [
            ("2026-09-10T20:15:00Z", "2026-09-10T20:15:00Z"),
            ("2026-09-10T22:15:00+02:00", "2026-09-10T20:15:00Z"),
            ("2026-09-10T18:45:00-01:30", "2026-09-10T20:15:00Z"),
            ("2026-09-10t20:15:00z", "2026-09-10T20:15:00Z"),
            ("2026-09-10T20:15:00-00:00", "2026-09-10T20:15:00Z"),
            ("2026-09-10T20:15:00.500Z", "2026-09-10T20:15:00.5Z"),
            ("2026-09-10T20:15:00.000Z", "2026-09-10T20:15:00Z"),
            ("2026-09-10T20:15:00.123456Z", "2026-09-10T20:15:00.123456Z"),
            (
                "2026-09-10T20:15:00.123456789Z",
                "2026-09-10T20:15:00.123456789Z",
            ),
            ("2026-09-11T00:15:00+23:59", "2026-09-10T00:16:00Z"),
            ("2024-02-29T12:00:00Z", "2024-02-29T12:00:00Z"),
            ("1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59.5Z"),
        ];
        for (input, output) in cases {
            assert_eq!(ok(input), output, "{input}");
        }
    }

    #[test]
    fn instants_outside_the_grammar_are_refused_naming_why() {
        let cases = [
            ("", "empty"),
            ("tomorrow", "date"),
            ("2026-09-10T20:15:00", "no offset"),
            ("2026-09-10T20:15:00.5", "no offset"),
            ("2026-09-10T20:15Z", "no seconds"),
            ("2026-09-10T20:15+02:00", "no seconds"),
            ("2026-09-10 20:15:00Z", "space"),
            ("2026-09-10", "no time"),
            ("2026-09-10T20:15:00,5Z", "comma"),
            ("2026-09-10T20:15:00.Z", "no digits"),
            ("2026-09-10T20:15:00.1234567891Z", "nanosecond"),
            ("2026-09-10T20:15:00+05", "without minutes"),
            ("2026-09-10T20:15:00+0500", "without a colon"),
            ("2026-09-10T20:15:00+24:00", "00 to 23"),
            ("2026-09-10T20:15:00+05:60", "00 to 59"),
            ("2026-09-10T20:15:00 Z", "offset should be"),
            ("2026-09-10T24:00:00Z", "hour 24"),
            ("2026-09-10T25:00:00Z", "hour 25"),
            ("2026-09-10T20:60:00Z", "minute 60"),
            ("2026-09-10T20:15:61Z", "second 61"),
            ("2026-02-30T20:15:00Z", "day 30"),
            ("2026-13-01T20:15:00Z", "month 13"),
            ("2026-00-01T20:15:00Z", "month 00"),
            ("2026-09-00T20:15:00Z", "day 00"),
            ("+002026-09-10T20:15:00Z", "date"),
            (" 2026-09-10T20:15:00Z", "spaces around"),
            ("2026-09-10T20:15:00Z\n", "spaces around"),
            ("0000-12-31T23:59:59Z", "before 0001-01-01"),
            ("2026-9-10T20:15:00Z", "date"),
        ];
        for (input, reason) in cases {
            let err = Instant::parse(input).expect_err(input);
            assert!(err.contains(reason), "{input:?}: {err}");
        }
    }

    #[test]
    fn the_range_runs_from_year_1_to_the_last_nanosecond_of_9999() {
        assert_eq!(ok("0001-01-01T00:00:00Z"), "0001-01-01T00:00:00Z");
        assert_eq!(ok("9999-12-31T23:59:59Z"), "9999-12-31T23:59:59Z");
        assert_eq!(
            ok("9999-12-31T23:59:59.999999999Z"),
            "9999-12-31T23:59:59.999999999Z"
        );
        assert_eq!(Instant::parse("0001-01-01T00:00:00Z"), Ok(Instant::MIN));
        assert_eq!(
            Instant::parse("9999-12-31T23:59:59.999999999Z"),
            Ok(Instant::MAX)
        );
        // In range only once normalised to UTC.
        assert_eq!(ok("0001-01-01T00:30:00+00:30"), "0001-01-01T00:00:00Z");
        assert_eq!(ok("0000-12-31T23:30:00-00:30"), "0001-01-01T00:00:00Z");
        let before = Instant::parse("0001-01-01T00:00:00+00:01").unwrap_err();
        assert!(before.contains("before 0001-01-01T00:00:00Z"), "{before}");
        let after = Instant::parse("9999-12-31T23:59:59-00:01").unwrap_err();
        assert!(
            after.contains("after 9999-12-31T23:59:59.999999999Z"),
            "{after}"
        );
        assert_eq!(Instant::MIN.as_nanos(), -62_135_596_800 * SECOND);
        assert!(Instant::from_nanos(Instant::MAX.as_nanos() + 1).is_err());
        assert!(Instant::from_nanos(Instant::MIN.as_nanos() - 1).is_err());
        assert_eq!(Instant::MAX.timestamp(), None);
        assert_eq!(
            Instant::parse("9999-12-30T22:00:00Z").unwrap().timestamp(),
            Some("9999-12-30T22:00:00Z".parse().unwrap())
        );
    }

    #[test]
    fn a_leap_second_is_the_last_nanosecond_of_its_minute() {
        for text in [
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:60.5Z",
            "2017-01-01T00:59:60+01:00",
            "2016-12-31T22:59:60-01:00",
        ] {
            let r = Instant::parse_reading(text).unwrap();
            assert!(r.leap_second, "{text}");
            assert_eq!(
                r.instant.to_string(),
                "2016-12-31T23:59:59.999999999Z",
                "{text}"
            );
            assert!(r.instant > Instant::parse("2016-12-31T23:59:59.99999999Z").unwrap());
            assert!(r.instant < Instant::parse("2017-01-01T00:00:00Z").unwrap());
        }
        assert!(
            !Instant::parse_reading("2016-12-31T23:59:59Z")
                .unwrap()
                .leap_second
        );
        for text in [
            "2016-12-31T23:58:60Z",
            "2016-12-31T12:59:60Z",
            "2017-01-01T00:59:60Z",
            "2016-12-31T23:59:60+01:00",
        ] {
            let err = Instant::parse(text).unwrap_err();
            assert!(err.contains("leap second"), "{text}: {err}");
        }
        // The last minute of the range may end in a leap second too.
        assert_eq!(Instant::parse("9999-12-31T23:59:60Z"), Ok(Instant::MAX));
    }

    #[test]
    fn zero_values_are_year_one_and_the_epoch_only() {
        for (text, zero) in [
            ("0001-01-01T00:00:00Z", true),
            ("1970-01-01T00:00:00Z", true),
            ("1970-01-01T01:00:00+01:00", true),
            ("1970-01-01T00:00:00.000000001Z", false),
            ("0001-01-01T00:00:01Z", false),
            ("2026-09-10T20:15:00Z", false),
        ] {
            assert_eq!(
                Instant::parse(text).unwrap().is_zero_value(),
                zero,
                "{text}"
            );
        }
    }

    #[test]
    fn instants_round_trip_through_serde_and_nanos() {
        let t = Instant::parse("2026-09-10T22:15:00.25+02:00").unwrap();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2026-09-10T20:15:00.25Z\"");
        assert_eq!(serde_json::from_str::<Instant>(&json).unwrap(), t);
        assert_eq!(Instant::from_nanos(t.as_nanos()), Ok(t));
        assert!(serde_json::from_str::<Instant>("\"2026-09-10T20:15:00\"").is_err());
    }

    #[test]
    fn durations_have_fixed_lengths() {
        let cases = [
            ("PT2H", 2 * HOUR),
            ("PT1H45M", HOUR + 45 * 60 * SECOND),
            ("P2D", 48 * HOUR),
            ("P1W", 7 * 24 * HOUR),
            ("PT0S", 0),
            ("PT0.5S", SECOND / 2),
            ("PT0,5S", SECOND / 2),
            ("PT1,5H", 3 * HOUR / 2),
            ("P0.5D", 12 * HOUR),
            ("P0.5W", 84 * HOUR),
            ("P1DT2H", 26 * HOUR),
            ("P1DT2H30M", 26 * HOUR + 30 * 60 * SECOND),
            ("P1DT1S", 24 * HOUR + SECOND),
            ("PT30M0.000000001S", 30 * 60 * SECOND + 1),
            ("PT90M", 90 * 60 * SECOND),
            ("P007D", 7 * 24 * HOUR),
        ];
        for (text, nanos) in cases {
            let d = IsoDuration::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(d.as_nanos(), nanos, "{text}");
            assert_eq!(d.as_str(), text);
            assert_eq!(d.to_string(), text);
        }
    }

    #[test]
    fn durations_outside_the_subset_are_refused_naming_why() {
        let cases = [
            ("", "empty"),
            ("P", "empty"),
            ("PT", "empty"),
            ("P1DT", "T with nothing after"),
            ("P1Y", "years"),
            ("P0Y", "years"),
            ("P1M", "months"),
            ("P0M", "months"),
            ("P1Y2M3D", "years"),
            ("-PT1H", "sign"),
            ("+PT1H", "sign"),
            ("pt1h", "lower-case"),
            ("PT1h", "lower-case"),
            ("P1W1D", "weeks"),
            ("P1DT1H1W", "after T"),
            ("PT0.5H30M", "fraction"),
            ("P0.5DT1H", "fraction"),
            ("PT1.5S2", "no unit"),
            ("PT1.1234567891S", "at most 9"),
            ("PT1.S", "no digits"),
            ("PT.5S", "no number"),
            ("P1H", "before T"),
            ("PT1D", "after T"),
            ("PT30M1H", "order"),
            ("P1D1D", "order"),
            ("PT1HT1M", "T twice"),
            ("PT2", "no unit"),
            ("PT2X", "designator"),
            ("2 hours", "start with P"),
            ("2h", "start with P"),
            (" PT1H", "spaces around"),
            ("PT1H ", "spaces around"),
            ("P3660000D", "instant range"),
            (
                "PT99999999999999999999999999999999999999999H",
                "instant range",
            ),
        ];
        for (text, reason) in cases {
            let err = IsoDuration::parse(text).expect_err(text);
            assert!(err.contains(reason), "{text:?}: {err}");
        }
    }

    #[test]
    fn the_longest_duration_spans_the_range() {
        // 0001-01-01 to 9999-12-31 is 3_652_058 days, plus a day less a nanosecond.
        assert!(IsoDuration::parse("P3652058D").is_ok());
        assert!(IsoDuration::parse("P3652059D").is_err());
        let span = Instant::MAX.as_nanos() - Instant::MIN.as_nanos();
        assert_eq!(
            IsoDuration::parse(&format!("PT{}.{:09}S", span / SECOND, span % SECOND))
                .unwrap()
                .as_nanos(),
            span
        );
        assert_eq!(
            Instant::MIN.checked_plus(&IsoDuration::parse("P3652058D").unwrap()),
            Some(Instant::parse("9999-12-31T00:00:00Z").unwrap())
        );
    }

    #[test]
    fn plus_adds_the_fixed_length_and_saturates_at_the_end() {
        let t = Instant::parse("2026-09-11T02:41:00Z").unwrap();
        let d = IsoDuration::parse("PT1H45M").unwrap();
        assert_eq!(t.plus(d.clone()).to_string(), "2026-09-11T04:26:00Z");
        assert_eq!(t.checked_plus(&d), Some(t.plus(d)));
        let late = Instant::parse("9999-12-31T23:00:00Z").unwrap();
        let two_hours = IsoDuration::parse("PT2H").unwrap();
        assert_eq!(late.checked_plus(&two_hours), None);
        assert_eq!(late.plus(two_hours), Instant::MAX);
        assert_eq!(
            late.checked_plus(&IsoDuration::parse("PT59M59.999999999S").unwrap()),
            Some(Instant::MAX)
        );
    }
}
