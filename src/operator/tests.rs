//! The operator's tables, drawn from route bodies.

use super::*;

#[test]
fn the_agents_table_says_why_a_card_is_not_in_use() {
    let body = serde_json::json!({ "agents": [
        { "agentId": "booking", "delivery": "ok", "card": { "state": "ok" } },
        { "agentId": "partner", "delivery": "ok", "card": {
            "state": "unavailable",
            "error": "card http://127.0.0.1:9/: connection refused",
            "nextTryAt": "2026-09-10T12:00:30Z" } }
    ]});
    let out = agents_table(&body, 100);
    assert!(out.contains("unavailable"), "{out}");
    assert!(
        out.contains("card of partner: card http://127.0.0.1:9/: connection refused (read again at 2026-09-10T12:00:30Z)"),
        "{out}"
    );
    assert!(!out.contains("card of booking"), "{out}");
}

/// The worked example's subject on a compressed clock, as `GET /v1/subjects/…` answers it.
fn worked_view() -> Value {
    let lapse = |kind: &str, at: &str| json!({ "lapse": kind, "lapsedAt": at, "dueAt": at });
    json!({
        "subject": { "type": "shipment", "id": "PA-2026-0901" },
        "expectations": [
            { "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest", "status": "open",
              "projectedDueAt": "2026-12-01T00:22:01Z", "dueAt": "2026-12-01T00:22:01.123456789Z",
              "basis": "observed", "satisfaction": null,
              "lapses": [lapse("overdue", "2026-12-01T00:22:02Z"), lapse("skipped", "2026-12-01T00:22:02Z")] },
            { "expectationId": "exp-01J8Q0ARRIVE", "kind": "shipment.arrival", "status": "open",
              "projectedDueAt": "2026-12-01T00:22:05Z", "dueAt": "2026-12-01T00:22:03Z",
              "basis": "observed", "satisfaction": { "observedAt": "2026-12-01T00:22:09Z", "late": true },
              "lapses": [lapse("overdue", "2026-12-01T00:22:04Z"), lapse("stalled", "2026-12-01T00:22:06Z")] }
        ],
        "facts": [
            { "observedAt": "2026-12-01T00:22:02Z", "factKey": "shipment.departed:PA-2026-0901",
              "source": "carrier-feed:emirates", "satisfied": ["exp-01J8Q0DEPART"] }
        ]
    })
}

/// The widest line of `out`, in characters (the box drawing is one column each).
fn widest(out: &str) -> usize {
    out.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn tables_fit_a_hundred_columns_and_keep_what_they_show() {
    let subject = subject_tables(&worked_view(), 100);
    assert!(
        widest(&subject) <= 100,
        "{} columns:\n{subject}",
        widest(&subject)
    );
    for whole in [
        "exp-01J8Q0MANIFEST",
        "shipment.departed:PA-2026-0901",
        "carrier-feed:emirates",
        "2026-12-01 00:22:02Z",
        "(projected",
        "basis:",
        "observed",
    ] {
        assert!(subject.contains(whole), "{whole:?} in\n{subject}");
    }
    // Instants to the second: the fraction is --json's.
    assert!(!subject.contains(".123"), "{subject}");

    let table = lapses_table(&lapses(3), 100);
    assert!(
        widest(&table) <= 100,
        "{} columns:\n{table}",
        widest(&table)
    );

    let agents = agents_table(
        &json!({ "agents": [{ "agentId": "booking", "delivery": "retrying",
        "retryingSince": "2026-12-01T00:22:02Z", "card": { "state": "stale" },
        "lastError": "HTTP 503 Service Unavailable from http://booking.example/a2a" }] }),
        100,
    );
    assert!(
        widest(agents.split("\ncard of").next().unwrap_or_default()) <= 100,
        "{agents}"
    );
}

/// `n` lapse tasks as `GET /v1/lapses` shows them, with long ids, a completed task and a
/// long last error.
fn lapses(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({ "lapsedAt": "2026-12-01T00:22:02Z", "lapse": "overdue",
            "agent": "booking", "expectationId": format!("exp-01J8Q0MANIFEST-{i}"),
            "delivery": "withdrawn", "attempts": 12, "taskState": "TASK_STATE_COMPLETED",
            "lastError": "transport: error sending request for url (http://127.0.0.1:9/): connection refused" }))
        .collect()
}

/// Every word of the cells (split at spaces and line ends) appears whole on some line.
fn words_whole(out: &str, words: &[&str]) {
    for word in words {
        assert!(
            out.lines().any(|l| l.contains(word)),
            "{word:?} is broken in\n{out}"
        );
    }
}

#[test]
fn tables_fit_the_width_asked_and_never_break_a_word() {
    let rows = lapses(2);
    let words = [
        "overdue",
        "2026-12-01",
        "00:22:02Z",
        "booking",
        "exp-01J8Q0MANIFEST-0",
        "exp-01J8Q0MANIFEST-1",
        "withdrawn",
        "COMPLETED",
        "attempt(s)",
        "transport:",
        "request",
    ];
    // The least the table can be: its longest words side by side, with the frame.
    let least = widest(&lapses_table(&rows, 1));
    assert!(least < 100, "{least}");
    for width in [200, 160, 120, 100, least + 1, least] {
        let out = lapses_table(&rows, width);
        assert!(
            widest(&out) <= width,
            "{width}: {} wide\n{out}",
            widest(&out)
        );
        words_whole(&out, &words);
    }
    // Wide enough for every line: nothing wraps.
    let wide = lapses_table(&rows, 200);
    for line in [
        "transport: error sending request for url ...",
        "12 attempt(s)",
        "lapse / lapsed at",
    ] {
        assert!(wide.contains(line), "{line:?} on one line in\n{wide}");
    }
    // Narrower than the longest words: wider lines, whole words.
    for width in [least - 1, 60, 40, 1] {
        let out = lapses_table(&rows, width);
        assert_eq!(widest(&out), least, "{width}:\n{out}");
        words_whole(&out, &words);
    }
    let subject = subject_tables(&worked_view(), 50);
    words_whole(
        &subject,
        &[
            "exp-01J8Q0MANIFEST",
            "shipment.departed:PA-2026-0901",
            "carrier-feed:emirates",
        ],
    );
}

#[test]
fn a_long_last_error_is_cut_at_a_space() {
    let text = "transport: error sending request for url (http://127.0.0.1:9/): connection refused";
    assert_eq!(
        shortened(text, 60),
        "transport: error sending request for url ..."
    );
    assert_eq!(shortened("short", 60), "short");
    let long = "x".repeat(80);
    assert_eq!(shortened(&long, 60), format!("{long} ..."));
}

#[test]
fn the_never_instant_is_shown_to_the_second() {
    assert_eq!(at(&json!("9999-12-31T23:59:59Z")), "9999-12-31 23:59:59Z");
    assert_eq!(at(&json!("2016-12-31T23:59:60Z")), "2016-12-31 23:59:59Z");
    assert_eq!(at(&json!("soon")), "soon");
}
