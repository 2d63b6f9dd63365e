//! Hostile requests: Facts: the time grammar on `observedAt`, wrong types, ids.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Facts: the time grammar on `observedAt`, wrong types, ids. ---
    let facts = |name: &str, body: Value, n: &[&str]| {
        case(
            format!("facts: {name}"),
            "POST",
            "/v1/facts",
            Auth::Bearer(SOURCE_TOKEN),
        )
        .json(&body)
        .problem(400, n)
    };
    for at in [
        "2026-09-10T20:15:00",
        "2026-09-10T20:15Z",
        "2026-09-10 20:15:00Z",
        "2026-09-10T20:15:00,5Z",
        "2026-09-10T20:15:00+05",
        "2026-09-10T20:15:00+0500",
        "2026-09-10T20:15:00+24:00",
        "2026-09-10T24:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-09-10T20:15:00.1234567890Z",
        "2026-09-10T20:15:60Z",
        "10000-01-01T00:00:00Z",
        "0000-12-31T23:59:59Z",
        "",
        "  ",
        "2026-09-10T20:15:00.Z",
        "2026-9-10T20:15:00Z",
        "+002026-09-10T20:15:00Z",
        "2026-09-10T20:15:00Z ",
        "2026-09-10T20:15:00\u{0}Z",
        "1757535300",
        "2026-09-10T20:61:00Z",
        "2026-09-10T20:15:00-25:00",
    ] {
        out.push(facts(
            &format!("observedAt {at:?}"),
            fact(json!(at)),
            &["observedAt"],
        ));
    }
    for (name, body, n) in [
        (
            "observedAt a number",
            fact(json!(1757535300)),
            vec!["observedAt"],
        ),
        ("observedAt null", fact(Value::Null), vec!["observedAt"]),
        (
            "factKey missing",
            json!({ "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey null",
            json!({ "factKey": null, "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey a number",
            json!({ "factKey": 1e308, "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey empty",
            json!({ "factKey": "", "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey with a control character",
            json!({ "factKey": "a\u{1b}[31m", "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey", "control"],
        ),
        (
            "subject a string",
            json!({ "factKey": "k", "observedAt": "2026-09-10T20:15:00Z", "subject": "PA-H" }),
            vec!["subject"],
        ),
        (
            "subject id with a newline",
            json!({ "factKey": "k", "observedAt": "2026-09-10T20:15:00Z", "subject": { "type": "shipment", "id": "PA\nH" } }),
            vec!["subject.id"],
        ),
        (
            "facts not an array",
            json!({ "facts": { "0": fact(json!("2026-09-10T20:15:00Z")) } }),
            vec!["facts"],
        ),
        ("facts empty", json!({ "facts": [] }), vec!["facts"]),
        ("facts null", json!({ "facts": null }), vec!["facts"]),
        (
            "a batch with one bad fact",
            json!({ "facts": [fact(json!("2026-09-10T20:15:00Z")), fact(json!("yesterday"))] }),
            vec!["facts[1]", "observedAt"],
        ),
        (
            "1001 facts",
            json!({ "facts": vec![fact(json!("2026-09-10T20:15:00Z")); 1001] }),
            vec!["facts_per_request"],
        ),
        (
            "a 100 kB factKey",
            json!({ "factKey": "k".repeat(100_000), "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["string_bytes"],
        ),
    ] {
        out.push(facts(
            name,
            body,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
}
