//! Hostile requests: Push: single expectations refused (200, in `rejected`, naming the field).

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Push: single expectations refused (200, in `rejected`, naming the field). ---
    let refuse = |name: &str, body: Value, n: &[&str]| {
        case(
            format!("push refuses: {name}"),
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&body)
        .refused(n)
    };
    for (grace, why) in [
        ("P1Y", "years"),
        ("P0M", "months"),
        ("P1M", "months"),
        ("-PT1H", "sign"),
        ("+PT1H", "sign"),
        ("pt1h", "upper"),
        ("P1W1D", "W"),
        ("P", "empty"),
        ("PT", "empty"),
        ("PT0.5H30M", "smallest"),
        ("PT0.1234567890S", "9"),
        ("P1DT", ""),
        ("PT1H1H", ""),
        ("1H", ""),
        (" ", ""),
        ("P99999999999999999999D", ""),
        ("PT1.S", ""),
        ("P1.5W2D", ""),
    ] {
        out.push(refuse(
            &format!("grace {grace:?}"),
            with("grace", json!(grace)),
            &["grace", why],
        ));
    }
    for (due, why) in [
        ("2026-09-10T20:15:00", "offset"),
        ("2026-09-10T20:15Z", ""),
        ("2026-09-10 20:15:00Z", ""),
        ("2026-09-10T20:15:00,5Z", ""),
        ("2026-09-10T20:15:00+05", ""),
        ("2026-09-10T20:15:00+0500", ""),
        ("2026-09-10T20:15:00+24:00", ""),
        ("2026-09-10T24:00:00Z", ""),
        ("2026-02-30T00:00:00Z", ""),
        ("2026-13-01T00:00:00Z", ""),
        ("2026-09-10T20:15:00.1234567890Z", "precision"),
        ("2026-09-10T20:15:60Z", ""),
        ("10000-01-01T00:00:00Z", ""),
        ("", ""),
        ("2026-09-10T20:15:00.Z", ""),
    ] {
        out.push(refuse(
            &format!("dueAt {due:?}"),
            with("dueAt", json!(due)),
            &["dueAt", why],
        ));
    }
    // The instant range: a deadline past 9999-12-31.
    let mut e = exp("exp-h");
    e["dueAt"] = json!("9999-12-31T23:59:59Z");
    e["grace"] = json!("P1D");
    out.push(refuse(
        "a deadline beyond the instant range",
        artifact(json!([e])),
        &["range"],
    ));
    for (member, value, n) in [
        ("dueAt", json!(1757535300), vec!["dueAt"]),
        ("dueAt", Value::Null, vec!["dueAt"]),
        ("grace", json!(3600), vec!["grace"]),
        ("kind", json!("shipment.teleport"), vec!["kind"]),
        ("kind", json!(["shipment.manifest"]), vec!["kind"]),
        ("subject", json!("PA-H"), vec!["subject"]),
        (
            "subject",
            json!({ "type": "shipment", "id": "PA\u{0}H" }),
            vec!["subject.id", "control"],
        ),
        (
            "subject",
            json!({ "type": "shipment", "id": "x".repeat(513) }),
            vec!["subject.id", "512"],
        ),
        (
            "subject",
            json!({ "type": "shipment", "id": null }),
            vec!["subject"],
        ),
        ("satisfiedBy", json!({ "factKey": 7 }), vec!["satisfiedBy"]),
        ("satisfiedBy", json!({}), vec!["satisfiedBy"]),
        (
            "expectationId",
            json!("exp\u{7}h"),
            vec!["expectationId", "control"],
        ),
        ("expectationId", json!(""), vec!["expectationId"]),
        ("expectationId", json!(12), vec!["expectationId"]),
        ("horizon", json!("2000-01-01T00:00:00Z"), vec!["horizon"]),
        (
            "anchor",
            json!({ "expectationId": "exp-h", "offset": "PT1H" }),
            vec!["anchor"],
        ),
        (
            "anchor",
            json!({ "expectationId": "exp-base", "offset": "P1Y" }),
            vec!["offset"],
        ),
        ("anchor", json!("exp-base"), vec!["anchor"]),
        ("after", json!(["exp-h"]), vec!["after"]),
        ("after", json!("exp-base"), vec!["after"]),
        ("supersedes", json!("exp-never-raised"), vec!["supersedes"]),
        ("supersedes", json!("exp-other-subject"), vec!["supersedes"]),
        ("expects", json!(null), vec!["expects"]),
    ] {
        out.push(refuse(
            &format!("{member} = {value}"),
            with(member, value),
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    out.push(refuse("expectations not an array", json!({ "artifactUpdate": { "taskId": "task-h", "contextId": "ctx-h",
        "artifact": { "artifactId": "a", "parts": [], "metadata": { URI: { "expectations": { "0": exp("x") } } } } } }), &["expectations"]));
}
