//! Hostile requests: Credentials: missing, unknown, of the wrong kind, of another tenant.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Credentials: missing, unknown, of the wrong kind, of another tenant. ---
    let guarded: Vec<(&'static str, &'static str, Option<Value>, Auth)> = vec![
        (
            "POST",
            "/v1/agents/booking/push",
            Some(with("grace", json!("PT1H"))),
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "POST",
            "/v1/facts",
            Some(fact(json!("2026-09-10T20:15:00Z"))),
            Auth::Bearer(PUSH_TOKEN),
        ),
        (
            "GET",
            "/v1/agents/booking/rejections",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "GET",
            "/v1/subjects/shipment/PA-BASE",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        ("GET", "/v1/lapses", None, Auth::Bearer(TEACHER)),
        (
            "POST",
            "/v1/lapses/retry",
            Some(json!({ "agent": "booking", "messageIds": [] })),
            Auth::Bearer(PUSH_TOKEN),
        ),
        ("GET", "/v1/agents", None, Auth::Bearer(SOURCE_TOKEN)),
        (
            "GET",
            "/v1/definitions/invoices",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "POST",
            "/v1/definitions/invoices/lessons",
            Some(
                json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana" }),
            ),
            Auth::Bearer(OPERATOR_TOKEN),
        ),
        (
            "GET",
            "/v1/sources/carrier-feed:emirates/rejections",
            None,
            Auth::Bearer(PUSH_TOKEN),
        ),
    ];
    for (method, path, body, wrong_kind) in guarded {
        for (name, auth, status) in [
            ("missing credential", Auth::None, 401),
            ("unknown token", Auth::Bearer("no-such-token"), 401),
            (
                "malformed Authorization",
                Auth::Raw("authorization", "Basic Zm9vOmJhcg=="),
                401,
            ),
            ("wrong kind of credential", wrong_kind, 403),
        ] {
            let mut c =
                case(format!("{method} {path}: {name}"), method, path, auth).problem(status, &[]);
            if let Some(b) = &body {
                c = c.json(b);
            }
            out.push(c);
        }
    }
    // Other tenant: each sees only its own.
    let a = artifact(json!([exp("exp-b")]));
    out.push(
        case(
            "push: another tenant's agent at booking's route",
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(AGENT_B),
        )
        .json(&a)
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "rejections: another tenant's operator",
            "GET",
            "/v1/agents/booking/rejections",
            Auth::Bearer(OPERATOR_B),
        )
        .problem(404, &["booking"]),
    );
    out.push(
        case(
            "subject: another tenant's operator",
            "GET",
            "/v1/subjects/shipment/PA-BASE",
            Auth::Bearer(OPERATOR_B),
        )
        .problem(404, &["PA-BASE"]),
    );
    out.push(
        case(
            "definition: another tenant's teacher",
            "GET",
            "/v1/definitions/invoices",
            Auth::Bearer(TEACHER_B),
        )
        .problem(404, &["invoices"]),
    );
    out.push(case("lesson: another tenant's teacher", "POST", "/v1/definitions/invoices/lessons", Auth::Bearer(TEACHER_B)).json(&json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana-b" })).problem(404, &["invoices"]));
    out.push(
        case(
            "retry: another tenant's agent",
            "POST",
            "/v1/lapses/retry",
            Auth::Bearer(OPERATOR_B),
        )
        .json(&json!({ "agent": "booking", "messageIds": ["m"] }))
        .problem(404, &["booking"]),
    );
    out.push(
        case(
            "webhook: another tenant's source",
            "POST",
            "/v1/sources/carrier-feed:mapped/webhook",
            Auth::Bearer(SOURCE_B),
        )
        .json(&json!({}))
        .problem(403, &["carrier-feed:mapped"]),
    );
    out.push(case("lesson: taughtBy someone else", "POST", "/v1/definitions/invoices/lessons", Auth::Bearer(TEACHER)).json(&json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "mallory" })).problem(403, &["taughtBy"]));
}
