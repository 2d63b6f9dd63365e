//! The worked example's inputs (expectations-v1 §8 and Appendix B) as request bodies: the
//! booking artifact an agent's push posts and the departure fact a carrier reports.
//!
//! `examples/booking-artifact.json` carries the worked example's own due times, in September
//! 2026: posted later, every deadline has passed and everything lapses at once. The live form
//! ([`booking_artifact`] from an instant, on a compressed clock) tells the same story from now,
//! for `a2a-watcher demo` (one-second steps) and `a2a-watcher example-artifact --from now`
//! (twenty-second steps: the story in under five minutes, slow enough to follow by hand).

use anyhow::{bail, Context};
use jiff::{SignedDuration, Timestamp};
use serde_json::{json, Value};
use watcher_core::time::Instant;

/// The worked example's booking artifact as the repository keeps it (due times in September 2026).
pub const WORKED_ARTIFACT: &str = include_str!("../examples/booking-artifact.json");

/// When the worked example's carrier observed the departure (expectations-v1 Appendix B).
pub const WORKED_DEPARTURE: &str = "2026-09-11T02:41:00Z";

/// The subject of the worked example.
pub const SHIPMENT: &str = "PA-2026-0901";

/// Steps of `a2a-watcher example-artifact --from`: the story takes 14 of them.
pub const BY_HAND_STEP: SignedDuration = SignedDuration::from_secs(20);

/// `base + n` steps, in the contract's output form (`2026-09-10T20:15:00Z`); the last instant
/// when past it ([`artifact_text`] refuses a start that far out first).
fn at(base: Instant, step: SignedDuration, n: i32) -> String {
    base.checked_add(step * n)
        .unwrap_or(Instant::MAX)
        .to_string()
}

/// `n` steps as an ISO 8601 duration (`PT40S`, `PT2M`), the form the extension's `grace` and
/// `offset` take.
fn span(step: SignedDuration, n: i32) -> String {
    (step * n).to_string()
}

/// The booking artifact of expectations-v1 §8 on a clock of `step`s from `base` (UTC): the
/// manifest due at 2 steps (grace 2), the departure at 8 after it (grace 6), the arrival
/// projected at 10, anchored 2 steps after the departure (grace 3), horizon at 14. Reported
/// departed after the manifest's grace, the manifest lapses `overdue` then `skipped`, the
/// arrival re-anchors to the departure plus 2 steps and lapses `overdue` 3 steps later, and
/// `stalled` at the horizon: the four lapse tasks of Appendix B.
pub fn booking_artifact(base: Instant, step: SignedDuration) -> Value {
    json!({ "artifactUpdate": {
        "taskId": "task-booking-7f3a", "contextId": "ctx-northgate-sep",
        "artifact": {
            "artifactId": "booking-7f3a", "name": "Booking confirmation",
            "parts": [{ "text": "Booked on EK203 departing DXB" }],
            "extensions": [watcher_core::EXPECTATIONS_URI],
            "metadata": { watcher_core::EXPECTATIONS_URI: { "expectations": [
                { "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest",
                  "subject": { "type": "shipment", "id": SHIPMENT },
                  "expects": "the airline manifest for PA-2026-0901",
                  "satisfiedBy": { "factKey": "shipment.manifest.received:PA-2026-0901" },
                  "dueAt": at(base, step, 2), "grace": span(step, 2), "basis": "observed" },
                { "expectationId": "exp-01J8Q0DEPART", "kind": "shipment.departure",
                  "subject": { "type": "shipment", "id": SHIPMENT },
                  "expects": "a departure event for EK203",
                  "satisfiedBy": { "factKey": "shipment.departed:PA-2026-0901" },
                  "dueAt": at(base, step, 8), "grace": span(step, 6), "basis": "observed",
                  "after": ["exp-01J8Q0MANIFEST"] },
                { "expectationId": "exp-01J8Q0ARRIVE", "kind": "shipment.arrival",
                  "subject": { "type": "shipment", "id": SHIPMENT },
                  "expects": "an arrival event at DOH",
                  "satisfiedBy": { "factKey": "shipment.arrived:PA-2026-0901" },
                  "dueAt": at(base, step, 10), "grace": span(step, 3),
                  "anchor": { "expectationId": "exp-01J8Q0DEPART", "offset": span(step, 2) },
                  "basis": "observed", "after": ["exp-01J8Q0DEPART"],
                  "horizon": at(base, step, 14) }
            ] } }
        }
    } })
}

/// The carrier's departure fact (the body of `POST /v1/facts`), observed at `observed_at`.
/// Without `source`, the watcher takes the source from the bearer token.
pub fn departure_fact(observed_at: Instant, source: Option<&str>) -> Value {
    let mut fact = json!({ "factKey": "shipment.departed:PA-2026-0901",
                           "observedAt": observed_at.to_string(),
                           "subject": { "type": "shipment", "id": SHIPMENT } });
    if let Some(source) = source {
        fact["source"] = json!(source);
    }
    fact
}

/// `now` (the clock, to the whole second) or an RFC 3339 instant with an offset, read as every
/// instant the watcher reads ([`Instant::parse`]: the one grammar, range and leap-second rule of
/// semantics.md "Time"; no spaces around it).
///
/// # Errors
/// When `text` is neither, naming what was given and, for an instant, what is wrong with it.
pub fn instant(text: &str) -> anyhow::Result<Instant> {
    if text.trim().eq_ignore_ascii_case("now") {
        return Timestamp::from_second(Timestamp::now().as_second())
            .ok()
            .and_then(Instant::from_timestamp)
            .context("the clock is out of range");
    }
    match Instant::parse(text) {
        Ok(t) => Ok(t),
        Err(e) => bail!("{text:?} is not `now` or an RFC 3339 instant: {e}"),
    }
}

/// `a2a-watcher example-artifact [--from now|INSTANT]`: the artifact as JSON, indented.
///
/// # Errors
/// When `from` is not an instant.
pub fn artifact_text(from: Option<&str>) -> anyhow::Result<String> {
    match from {
        None => Ok(WORKED_ARTIFACT.trim_end().to_owned()),
        Some(from) => {
            let base = instant(from)?;
            if base.checked_add(BY_HAND_STEP * 14).is_none() {
                bail!("{from:?} is too late: the story's horizon, 4 min 40 s after it, is past the last instant the watcher can hold");
            }
            Ok(serde_json::to_string_pretty(&booking_artifact(
                base,
                BY_HAND_STEP,
            ))?)
        }
    }
}

/// `a2a-watcher example-fact [--at now|INSTANT]`: the departure fact as JSON, indented;
/// observed at the worked example's instant without `at`.
///
/// # Errors
/// When `at` is not an instant.
pub fn fact_text(at: Option<&str>) -> anyhow::Result<String> {
    let observed = instant(at.unwrap_or(WORKED_DEPARTURE))?;
    Ok(serde_json::to_string_pretty(&departure_fact(
        observed, None,
    ))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expectation<'a>(artifact: &'a Value, id: &str) -> &'a Value {
        artifact["artifactUpdate"]["artifact"]["metadata"][watcher_core::EXPECTATIONS_URI]
            ["expectations"]
            .as_array()
            .expect("expectations")
            .iter()
            .find(|e| e["expectationId"] == id)
            .expect("the expectation")
    }

    #[test]
    fn the_by_hand_story_runs_in_twenty_second_steps_from_its_start() {
        let base = Instant::parse("2026-12-03T18:00:00Z").unwrap();
        let a = booking_artifact(base, BY_HAND_STEP);
        let manifest = expectation(&a, "exp-01J8Q0MANIFEST");
        assert_eq!(manifest["dueAt"], "2026-12-03T18:00:40Z");
        assert_eq!(manifest["grace"], "PT40S");
        let departure = expectation(&a, "exp-01J8Q0DEPART");
        assert_eq!(departure["dueAt"], "2026-12-03T18:02:40Z");
        assert_eq!(departure["grace"], "PT2M");
        let arrival = expectation(&a, "exp-01J8Q0ARRIVE");
        assert_eq!(arrival["dueAt"], "2026-12-03T18:03:20Z");
        assert_eq!(arrival["grace"], "PT1M");
        assert_eq!(arrival["anchor"]["offset"], "PT40S");
        assert_eq!(arrival["horizon"], "2026-12-03T18:04:40Z");
    }

    #[test]
    fn the_demo_story_runs_in_one_second_steps() {
        let base = Instant::parse("2026-12-03T18:00:00Z").unwrap();
        let a = booking_artifact(base, SignedDuration::from_secs(1));
        assert_eq!(expectation(&a, "exp-01J8Q0MANIFEST")["grace"], "PT2S");
        assert_eq!(
            expectation(&a, "exp-01J8Q0ARRIVE")["horizon"],
            "2026-12-03T18:00:14Z"
        );
    }

    #[test]
    fn without_an_instant_the_worked_example_is_printed_as_kept() {
        let text = artifact_text(None).unwrap();
        let a: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            expectation(&a, "exp-01J8Q0MANIFEST")["dueAt"],
            "2026-09-10T20:15:00Z"
        );
        let fact: Value = serde_json::from_str(&fact_text(None).unwrap()).unwrap();
        assert_eq!(fact["observedAt"], "2026-09-11T02:41:00Z");
        assert_eq!(fact["factKey"], "shipment.departed:PA-2026-0901");
        assert!(fact.get("source").is_none());
    }

    #[test]
    fn an_instant_is_now_or_rfc_3339_with_an_offset() {
        assert_eq!(
            instant("2026-12-03T19:00:00+01:00").unwrap().to_string(),
            "2026-12-03T18:00:00Z"
        );
        let whole = |t: Instant| t.as_nanos() % 1_000_000_000 == 0;
        assert!(whole(instant("now").unwrap()));
        assert!(whole(instant(" NOW ").unwrap()));
        let e = instant("tomorrow").unwrap_err().to_string();
        assert!(
            e.contains("\"tomorrow\" is not `now` or an RFC 3339 instant"),
            "{e}"
        );
        let e = artifact_text(Some("9999-12-31T23:56:00Z"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("is too late"), "{e}");
        assert!(instant("2026-12-03T18:00:00").is_err(), "no offset");
    }

    /// The flags read instants as every route does (semantics.md "Time"): the range runs to the
    /// last nanosecond of 9999, a leap second is the last nanosecond of its minute, and what
    /// the contract refuses is refused with its reason.
    #[test]
    fn the_flags_read_instants_with_the_one_grammar() {
        let fact =
            |at: &str| -> Value { serde_json::from_str(&fact_text(Some(at)).unwrap()).unwrap() };
        assert_eq!(
            fact("9999-12-31T23:59:59Z")["observedAt"],
            "9999-12-31T23:59:59Z"
        );
        assert_eq!(
            fact("2016-12-31T23:59:60Z")["observedAt"],
            "2016-12-31T23:59:59.999999999Z"
        );
        assert_eq!(
            fact("2026-09-10t20:15:00z")["observedAt"],
            "2026-09-10T20:15:00Z"
        );
        let a: Value =
            serde_json::from_str(&artifact_text(Some("9999-12-30T23:00:00Z")).unwrap()).unwrap();
        assert_eq!(
            expectation(&a, "exp-01J8Q0ARRIVE")["horizon"],
            "9999-12-30T23:04:40Z"
        );
        for (text, why) in [
            (" 2026-09-10T20:15:00Z", "spaces around"),
            ("2026-09-10 20:15:00Z", "space"),
            ("2026-09-10T20:15:00+0500", "without a colon"),
            ("2026-09-10T20:15:00,5Z", "comma"),
        ] {
            let e = fact_text(Some(text)).unwrap_err().to_string();
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
