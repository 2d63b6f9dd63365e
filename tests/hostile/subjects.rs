//! Hostile requests: Subjects and the list routes.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Subjects and the list routes. ---
    let op = |name: &str, method: &'static str, path: &str, status: u16, n: &[&str]| {
        case(
            format!("operator: {name}"),
            method,
            path,
            Auth::Bearer(OPERATOR_TOKEN),
        )
        .problem(status, n)
    };
    out.push(op(
        "a subject id with NUL",
        "GET",
        "/v1/subjects/shipment/PA%00H",
        400,
        &["subject.id"],
    ));
    out.push(op(
        "a subject id with ESC",
        "GET",
        "/v1/subjects/shipment/PA%1BH",
        400,
        &["subject.id"],
    ));
    out.push(op(
        "a subject id of invalid UTF-8",
        "GET",
        "/v1/subjects/shipment/%FF%FE",
        400,
        &[],
    ));
    out.push(op(
        "a subject id one byte too long",
        "GET",
        &format!("/v1/subjects/shipment/{}", "x".repeat(513)),
        400,
        &["subject.id", "512"],
    ));
    out.push(op(
        "a confusable subject (Cyrillic A)",
        "GET",
        "/v1/subjects/shipment/P%D0%90-BASE",
        404,
        &[],
    ));
    out.push(op(
        "a subject differing by case",
        "GET",
        "/v1/subjects/shipment/pa-base",
        404,
        &[],
    ));
    out.push(op(
        "a subject with a zero-width space",
        "GET",
        "/v1/subjects/shipment/PA-BASE%E2%80%8B",
        404,
        &[],
    ));
    out.push(op(
        "an agent id with a control character",
        "GET",
        "/v1/agents/book%07ing/rejections",
        400,
        &["agentId", "control"],
    ));
    out.push(op(
        "an unknown agent",
        "GET",
        "/v1/agents/nobody/rejections",
        404,
        &["nobody"],
    ));
    out.push(op("an unknown route", "GET", "/v1/everything", 404, &[]));
    out.push(op("a wrong method", "DELETE", "/v1/lapses", 405, &[]));
    for (name, body, status, n) in [
        (
            "retry: agent missing",
            json!({ "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent a number",
            json!({ "agent": 7, "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent empty",
            json!({ "agent": "", "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent with NUL",
            json!({ "agent": "book\u{0}ing", "messageIds": [] }),
            400,
            vec!["agent", "control"],
        ),
        (
            "retry: messageIds a string",
            json!({ "agent": "booking", "messageIds": "m" }),
            400,
            vec!["messageIds"],
        ),
        (
            "retry: messageIds of numbers",
            json!({ "agent": "booking", "messageIds": [1, 2] }),
            400,
            vec!["messageIds"],
        ),
        (
            "retry: an unknown agent",
            json!({ "agent": "nobody", "messageIds": [] }),
            404,
            vec!["nobody"],
        ),
        (
            "retry: a confusable agent",
            json!({ "agent": "bооking", "messageIds": [] }),
            404,
            vec!["bооking"],
        ),
    ] {
        out.push(
            case(
                name,
                "POST",
                "/v1/lapses/retry",
                Auth::Bearer(OPERATOR_TOKEN),
            )
            .json(&body)
            .problem(status, &n.iter().map(|s| &**s).collect::<Vec<_>>()),
        );
    }
}
