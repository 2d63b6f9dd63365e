//! Hostile requests: Signed and mapped webhooks: missing, wrong and malformed signatures; mappings that cannot be read.

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Signed webhook: missing, wrong and malformed signatures. ---
    let signed = format!("/v1/sources/{SIGNED_SOURCE}/webhook");
    let payload = json!({ "description": "tracker.updated", "status": "departed", "code": "PA-H", "datetime": "2026-09-10T20:15:00Z" });
    out.push(
        case("webhook: no signature", "POST", signed.clone(), Auth::None)
            .json(&payload)
            .problem(401, &["X-Hmac-Signature"]),
    );
    out.push(
        case(
            "webhook: wrong signature",
            "POST",
            signed.clone(),
            Auth::Raw(
                "x-hmac-signature",
                "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff",
            ),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    out.push(
        case(
            "webhook: signature not hex",
            "POST",
            signed.clone(),
            Auth::Raw("x-hmac-signature", "zz-not-hex"),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    out.push(
        case(
            "webhook: a bearer token instead of the signature",
            "POST",
            signed,
            Auth::Bearer(SIGNED_TOKEN),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    // Mapped webhook: the mapping cannot be read.
    let mapped = "/v1/sources/carrier-feed:mapped/webhook";
    for (name, body, n) in [
        (
            "each is not an array",
            json!({ "events": "x", "code": "C" }),
            vec!["mapped", "/events"],
        ),
        (
            "a slot names nothing",
            json!({ "events": [{ "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/status"],
        ),
        (
            "a slot of the wrong type",
            json!({ "events": [{ "status": {"x": 1}, "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/status"],
        ),
        (
            "an invalid instant",
            json!({ "events": [{ "status": "departed", "at": "2026-09-10 20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/at"],
        ),
        (
            "an instant of the wrong type",
            json!({ "events": [{ "status": "departed", "at": null }], "code": "C" }),
            vec!["mapped", "/at"],
        ),
        (
            "a control character in the key",
            json!({ "events": [{ "status": "dep\u{0}arted", "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "control"],
        ),
    ] {
        out.push(
            case(
                format!("webhook: {name}"),
                "POST",
                mapped,
                Auth::Bearer("src-token-mapped"),
            )
            .json(&body)
            .problem(422, &n.iter().map(|s| &**s).collect::<Vec<_>>()),
        );
    }
}
