//! Pure functions for EventBridge Scheduler: the schedule name of a timer, its `at()`
//! expression, whether to schedule at all, and the validation of names and expressions that
//! Scheduler would do (moto, the emulator the tests run against, does none of it).

use jiff::civil::DateTime;
use jiff::SignedDuration;
use watcher_core::engine::{TimerKey, TimerKind};
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;

use crate::digest::{base32_lower, tuple_digest};

/// Longest schedule (and schedule group) name Scheduler accepts, in characters.
pub const MAX_SCHEDULE_NAME_LEN: usize = 64;

/// How late Scheduler may fire a one-time schedule with its flexible time window off: anywhere
/// within the minute of its `at()` time. A timer due within this much of now is evaluated at once
/// instead of scheduled (see [`should_schedule`]).
pub const SCHEDULER_RESOLUTION: SignedDuration = SignedDuration::from_secs(60);

/// Domain tag of the name digest; a new naming scheme changes it so old and new never collide.
const NAME_TAG: &str = "a2a-watcher/schedule-name/v1";

/// The format inside `at(...)`: local date and time, no offset (the offset is the schedule's
/// `ScheduleExpressionTimezone`, always `UTC` here).
const AT_FORMAT: &str = "%Y-%m-%dT%H:%M:%S";

/// A schedule name or expression Scheduler would refuse. Not retryable: what to do is fix the
/// caller (a name or instant outside what Scheduler can hold).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleInputError {
    /// Not 1 to 64 characters of `[0-9a-zA-Z-_.]`.
    #[error("{name:?} is not a valid schedule name: {reason}")]
    Name {
        /// The name refused.
        name: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// Not `at(yyyy-mm-ddThh:mm:ss)` naming a real date and time.
    #[error("{expression:?} is not a valid one-time expression: {reason}")]
    Expression {
        /// The expression refused.
        expression: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// An instant whose whole second, rounded up, has no four-digit-year `at()` form (before
    /// year 1000, or in the last nanoseconds of the range of [`Instant`], after
    /// 9999-12-31T23:59:59Z).
    #[error("{at} cannot be written as an at() expression (years 1000 to 9999 only)")]
    OutOfRange {
        /// The instant.
        at: Instant,
    },
}

/// The name of the schedule for `key` of `tenant`: `d-` (deadline) or `h-` (horizon) followed by
/// the RFC 4648 base32 (lower case, unpadded, 52 characters) of a SHA-256 digest; 54 characters
/// of `[0-9a-z-]` in all, within Scheduler's 64 of `[0-9a-zA-Z-_.]`.
///
/// **One name per timer, whatever its instant.** The name is a function of the tenant and the
/// [`TimerKey`] alone — tenant, subject type and id, raising agent, expectation id and kind —
/// and not of the instant the timer fires at. So the create, the update when the expectation
/// re-anchors (a new deadline for the same key is an update of the same schedule, as the issue
/// asks), and the delete on satisfaction or withdrawal all address the same schedule, and
/// [`Timers::disarm`](watcher_runtime::ports::Timers::disarm), which has no instant, can find it.
/// "Generations" of a timer (armed, fired or disarmed, armed again, say after an early wake or a
/// re-anchor into the future) reuse the name; they never overlap, because a key has at most one
/// pending instant at a time.
///
/// **Collisions.** The digest covers a domain tag and the six fields, each length-prefixed, so
/// distinct (tenant, subject, agent, expectation id, kind) tuples have distinct preimages
/// (`("ab", "c")` and `("a", "bc")` included). Base32 of the full 256-bit digest is injective,
/// nothing is truncated, and the `d-`/`h-` prefix repeats the kind that is also hashed. Two
/// timers share a name only if SHA-256 collides: about n²/2²⁵⁷ for n timers, below 10⁻⁵⁸ for a
/// billion. The identifiers themselves never reach the name, so any characters (and lengths up
/// to [`MAX_ID_LEN`](watcher_core::ids::MAX_ID_LEN)) are fine; the schedule's description carries
/// them for people.
///
/// # Example
/// ```
/// # use watcher_core::engine::{TimerKey, TimerKind};
/// # use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject, Tenant};
/// let key = TimerKey {
///     subject: Subject::parse("shipment", "PA-2026-0901").unwrap(),
///     expectation: ExpectationRef {
///         agent: AgentId::parse("planner").unwrap(),
///         id: ExpectationId::parse("exp-1").unwrap(),
///     },
///     kind: TimerKind::Deadline,
/// };
/// let name = watcher_aws::schedule_name(&Tenant::default_tenant(), &key);
/// assert!(name.starts_with("d-"));
/// assert_eq!(name.len(), 54);
/// assert!(watcher_aws::validate_schedule_name(&name).is_ok());
/// ```
pub fn schedule_name(tenant: &Tenant, key: &TimerKey) -> String {
    let digest = tuple_digest(
        NAME_TAG,
        &[
            tenant.as_str(),
            &key.subject.subject_type,
            &key.subject.id,
            key.expectation.agent.as_str(),
            key.expectation.id.as_str(),
            key.kind.as_str(),
        ],
    );
    let prefix = match key.kind {
        TimerKind::Deadline => "d-",
        TimerKind::Horizon => "h-",
    };
    format!("{prefix}{}", base32_lower(&digest))
}

/// Checks a schedule name as Scheduler would: 1 to [`MAX_SCHEDULE_NAME_LEN`] characters of
/// `[0-9a-zA-Z-_.]`.
///
/// # Errors
/// [`ScheduleInputError::Name`] naming the rule broken.
pub fn validate_schedule_name(name: &str) -> Result<(), ScheduleInputError> {
    check_name(name)
}

/// Checks a schedule group name: the same rule as [`validate_schedule_name`].
///
/// # Errors
/// [`ScheduleInputError::Name`] naming the rule broken.
pub fn validate_group_name(name: &str) -> Result<(), ScheduleInputError> {
    check_name(name)
}

fn check_name(name: &str) -> Result<(), ScheduleInputError> {
    let refuse = |reason: String| ScheduleInputError::Name {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(refuse("it is empty".into()));
    }
    if name.len() > MAX_SCHEDULE_NAME_LEN {
        return Err(refuse(format!(
            "it is {} characters long; at most {MAX_SCHEDULE_NAME_LEN} are allowed",
            name.chars().count()
        )));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(refuse(format!("{c:?} is not one of [0-9a-zA-Z-_.]")));
    }
    Ok(())
}

/// `at(yyyy-mm-ddThh:mm:ss)` for `at` in UTC, rounded **up** to the whole second, so a schedule
/// never fires before `at` (the schedule's `ScheduleExpressionTimezone` is `UTC`). The result
/// passes [`validate_at_expression`].
///
/// # Errors
/// [`ScheduleInputError::OutOfRange`] when the rounded instant is not in years 1000 to 9999.
///
/// # Example
/// ```
/// # use watcher_core::time::Instant;
/// let at = Instant::parse("2026-09-10T22:15:00.25+02:00").unwrap();
/// assert_eq!(watcher_aws::at_expression(at).unwrap(), "at(2026-09-10T20:15:01)");
/// ```
pub fn at_expression(at: Instant) -> Result<String, ScheduleInputError> {
    let out_of_range = || ScheduleInputError::OutOfRange { at };
    let nanos = at.as_nanos();
    let second = nanos.div_euclid(1_000_000_000) + i128::from(nanos.rem_euclid(1_000_000_000) > 0);
    let rounded = second
        .checked_mul(1_000_000_000)
        .and_then(|n| Instant::from_nanos(n).ok())
        .ok_or_else(out_of_range)?;
    let civil = rounded.to_civil_utc();
    if !(1000..=9999).contains(&civil.year()) {
        return Err(out_of_range());
    }
    let expression = format!("at({})", civil.strftime(AT_FORMAT));
    validate_at_expression(&expression)?;
    Ok(expression)
}

/// Checks a one-time expression as Scheduler reads it: exactly `at(yyyy-mm-ddThh:mm:ss)`, every
/// field zero-padded, naming a real date and time (no `2026-02-30`, no offset, no fraction).
///
/// # Errors
/// [`ScheduleInputError::Expression`] naming what is wrong.
pub fn validate_at_expression(expression: &str) -> Result<(), ScheduleInputError> {
    let refuse = |reason: &str| ScheduleInputError::Expression {
        expression: expression.to_owned(),
        reason: reason.to_owned(),
    };
    let inner = expression
        .strip_prefix("at(")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| refuse("expected at(yyyy-mm-ddThh:mm:ss)"))?;
    let shape_ok = inner.len() == 19
        && inner.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            _ => b.is_ascii_digit(),
        });
    if !shape_ok {
        return Err(refuse(
            "expected yyyy-mm-ddThh:mm:ss, every field zero-padded, no offset or fraction",
        ));
    }
    DateTime::strptime(AT_FORMAT, inner).map_err(|_| refuse("not a real date and time"))?;
    Ok(())
}

/// Whether a timer due at `at` should be scheduled at `now`, rather than evaluated at once:
/// `true` only when `at` is more than [`SCHEDULER_RESOLUTION`] (60 s) after `now`.
///
/// When `false` the caller handles the timer itself: one already due is evaluated now; one due
/// within the minute is evaluated once `at` has passed on the caller's clock (a wait of at most
/// 60 s in the process), because Scheduler could not fire it reliably on time. Evaluating early
/// is harmless either way: the engine lapses nothing before `at` and asks to re-arm.
///
/// # Example
/// ```
/// # use watcher_core::time::Instant;
/// let now = Instant::parse("2026-09-10T20:00:00Z").unwrap();
/// assert!(!watcher_aws::should_schedule(now, Instant::parse("2026-09-10T20:01:00Z").unwrap()));
/// assert!(watcher_aws::should_schedule(now, Instant::parse("2026-09-10T20:01:01Z").unwrap()));
/// ```
pub fn should_schedule(now: Instant, at: Instant) -> bool {
    at.as_nanos() - now.as_nanos() > SCHEDULER_RESOLUTION.as_nanos()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashSet};

    use proptest::prelude::*;
    use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject};

    use super::*;

    fn key(subject: (&str, &str), agent: &str, id: &str, kind: TimerKind) -> TimerKey {
        TimerKey {
            subject: Subject::parse(subject.0, subject.1).unwrap(),
            expectation: ExpectationRef {
                agent: AgentId::parse(agent).unwrap(),
                id: ExpectationId::parse(id).unwrap(),
            },
            kind,
        }
    }

    fn tenant(t: &str) -> Tenant {
        Tenant::parse(t).unwrap()
    }

    fn instant(t: &str) -> Instant {
        Instant::parse(t).unwrap()
    }

    fn is_name_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
    }

    #[test]
    fn names_have_a_kind_prefix_and_a_full_digest() {
        let d = schedule_name(
            &tenant("default"),
            &key(
                ("shipment", "PA-1"),
                "planner",
                "exp-1",
                TimerKind::Deadline,
            ),
        );
        let h = schedule_name(
            &tenant("default"),
            &key(("shipment", "PA-1"), "planner", "exp-1", TimerKind::Horizon),
        );
        assert!(d.starts_with("d-") && h.starts_with("h-"), "{d} {h}");
        assert_eq!(d.len(), 54);
        assert_eq!(h.len(), 54);
        assert_ne!(d[2..], h[2..], "the kind is hashed too");
        assert!(d.chars().all(is_name_char));
        validate_schedule_name(&d).unwrap();
    }

    #[test]
    fn every_field_of_the_tuple_changes_the_name() {
        let base = ("default", ("shipment", "PA-1"), "planner", "exp-1");
        let name = |(t, s, a, i): (&str, (&str, &str), &str, &str)| {
            schedule_name(&tenant(t), &key(s, a, i, TimerKind::Deadline))
        };
        let names: BTreeSet<String> = [
            base,
            ("other", base.1, base.2, base.3),
            (base.0, ("parcel", "PA-1"), base.2, base.3),
            (base.0, ("shipment", "PA-2"), base.2, base.3),
            (base.0, base.1, "carrier", base.3),
            (base.0, base.1, base.2, "exp-2"),
            // Field boundaries moved: the same characters in other fields.
            (base.0, ("shipmen", "tPA-1"), base.2, base.3),
            (base.0, base.1, "plannere", "xp-1"),
        ]
        .into_iter()
        .map(name)
        .collect();
        assert_eq!(names.len(), 8);
    }

    #[test]
    fn identifiers_of_any_characters_and_length_make_valid_names() {
        let long = "x".repeat(watcher_core::ids::MAX_ID_LEN);
        let name = schedule_name(
            &tenant("tenant with spaces/and:ünïcödé"),
            &key(
                ("type ✓", &long),
                "agent@example.com",
                &long,
                TimerKind::Horizon,
            ),
        );
        validate_schedule_name(&name).unwrap();
    }

    #[test]
    fn names_are_checked_as_scheduler_would() {
        validate_schedule_name("a").unwrap();
        validate_schedule_name("A-b_c.9").unwrap();
        validate_schedule_name(&"x".repeat(64)).unwrap();
        for bad in ["", "a b", "a/b", "é", "a:b", "a*"] {
            assert!(validate_schedule_name(bad).is_err(), "{bad:?}");
        }
        let long = validate_schedule_name(&"x".repeat(65)).unwrap_err();
        assert!(long.to_string().contains("65 characters"), "{long}");
        assert!(validate_group_name("watcher-timers").is_ok());
        assert!(validate_group_name("watcher timers").is_err());
    }

    #[test]
    fn at_expressions_are_utc_whole_seconds_rounded_up() {
        for (at, expected) in [
            ("2026-09-10T20:15:00Z", "at(2026-09-10T20:15:00)"),
            ("2026-09-10T22:15:00+02:00", "at(2026-09-10T20:15:00)"),
            ("2026-09-10T20:15:00.000000001Z", "at(2026-09-10T20:15:01)"),
            ("2026-09-10T20:15:00.999999999Z", "at(2026-09-10T20:15:01)"),
            ("2026-12-31T23:59:59.5Z", "at(2027-01-01T00:00:00)"),
            ("1969-12-31T23:59:59.5Z", "at(1970-01-01T00:00:00)"),
            ("1000-01-01T00:00:00Z", "at(1000-01-01T00:00:00)"),
        ] {
            assert_eq!(at_expression(instant(at)).unwrap(), expected, "{at}");
        }
    }

    #[test]
    fn instants_without_a_four_digit_year_form_are_refused() {
        // The last instant, 9999-12-31T23:59:59.999999999Z, has no whole second after it.
        let last = Instant::MAX;
        for at in [instant("0999-12-31T23:59:59Z"), last] {
            assert_eq!(
                at_expression(at),
                Err(ScheduleInputError::OutOfRange { at })
            );
        }
        assert_eq!(
            at_expression(instant("9999-12-31T23:59:59Z")).unwrap(),
            "at(9999-12-31T23:59:59)"
        );
    }

    #[test]
    fn expressions_are_checked_as_scheduler_would() {
        validate_at_expression("at(2026-09-10T20:15:00)").unwrap();
        validate_at_expression("at(2028-02-29T23:59:59)").unwrap();
        for bad in [
            "",
            "at()",
            "2026-09-10T20:15:00",
            "at(2026-09-10T20:15:00Z)",
            "at(2026-09-10T20:15:00.5)",
            "at(2026-09-10 20:15:00)",
            "at(2026-9-10T20:15:00)",
            "at(2026-09-10T20:15)",
            "at(2026-02-30T00:00:00)",
            "at(2026-09-10T24:00:00)",
            "at(2026-09-10T20:60:00)",
            "at(+2026-09-10T20:15:00)",
            "rate(5 minutes)",
            "cron(0 20 * * ? *)",
            " at(2026-09-10T20:15:00)",
        ] {
            assert!(validate_at_expression(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_timers_beyond_the_scheduler_minute_are_scheduled() {
        let now = instant("2026-09-10T20:00:00Z");
        for (at, expected) in [
            ("2026-09-10T19:00:00Z", false),
            ("2026-09-10T20:00:00Z", false),
            ("2026-09-10T20:00:30Z", false),
            ("2026-09-10T20:01:00Z", false),
            ("2026-09-10T20:01:00.000000001Z", true),
            ("2026-09-10T20:05:00Z", true),
        ] {
            assert_eq!(should_schedule(now, instant(at)), expected, "{at}");
        }
    }

    fn id_text() -> impl Strategy<Value = String> {
        // Short ids over a small alphabet (so near-misses and shifted boundaries are common),
        // with the odd character no name may hold.
        "[ab:/ é-]{1,6}".prop_filter("non-blank", |s| !s.trim().is_empty())
    }

    fn tuple() -> impl Strategy<Value = (String, String, String, String, String, bool)> {
        (
            id_text(),
            id_text(),
            id_text(),
            id_text(),
            id_text(),
            any::<bool>(),
        )
    }

    fn key_of(t: &(String, String, String, String, String, bool)) -> (Tenant, TimerKey) {
        let kind = if t.5 {
            TimerKind::Deadline
        } else {
            TimerKind::Horizon
        };
        (tenant(&t.0), key((&t.1, &t.2), &t.3, &t.4, kind))
    }

    proptest! {
        #[test]
        fn names_are_short_in_alphabet_and_valid(t in tuple()) {
            let (tenant, key) = key_of(&t);
            let name = schedule_name(&tenant, &key);
            prop_assert!(name.len() <= MAX_SCHEDULE_NAME_LEN);
            prop_assert!(name.chars().all(is_name_char), "{}", name);
            prop_assert!(validate_schedule_name(&name).is_ok());
        }

        #[test]
        fn distinct_tuples_get_distinct_names(
            tuples in proptest::collection::hash_set(tuple(), 1..200)
        ) {
            let names: HashSet<String> = tuples
                .iter()
                .map(|t| {
                    let (tenant, key) = key_of(t);
                    schedule_name(&tenant, &key)
                })
                .collect();
            prop_assert_eq!(names.len(), tuples.len());
        }

        /// Generations: every arm, re-arm at another instant, and disarm of a key — including
        /// one read back from the timer's own JSON input, as the timer function re-arms it —
        /// addresses one schedule.
        #[test]
        fn every_generation_of_a_key_uses_one_name(
            t in tuple(),
            generations in proptest::collection::vec(0i64..4_000_000_000, 1..5),
        ) {
            let (tenant, key) = key_of(&t);
            let first = schedule_name(&tenant, &key);
            for _ in generations {
                let round_tripped: TimerKey =
                    serde_json::from_str(&serde_json::to_string(&key).unwrap()).unwrap();
                prop_assert_eq!(schedule_name(&tenant, &round_tripped), first.clone());
            }
        }

        #[test]
        fn at_expressions_are_never_early_and_at_most_a_second_late(
            nanos in -30_610_224_000_000_000_000i128..=253_402_300_799_000_000_000i128
        ) {
            let at = Instant::from_nanos(nanos).unwrap();
            let expression = at_expression(at).unwrap();
            prop_assert!(validate_at_expression(&expression).is_ok());
            let inner = &expression[3..expression.len() - 1];
            let fired = Instant::parse(&format!("{inner}Z")).unwrap();
            prop_assert!(fired >= at, "{} fires before {}", expression, at);
            prop_assert!(fired.as_nanos() - at.as_nanos() < 1_000_000_000);
        }
    }
}
