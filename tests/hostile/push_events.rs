//! Hostile requests: Push: the event itself is malformed (4xx, nothing recorded).

use super::*;

/// Appends this group's cases to `out`.
pub(super) fn cases(out: &mut Vec<Case>) {
    // --- Push: the event itself is malformed (4xx, nothing recorded). ---
    let push = |name: &str, body: Value, status: u16, n: &[&str]| {
        case(
            format!("push: {name}"),
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&body)
        .problem(status, n)
    };
    let status = |state: Value| json!({ "statusUpdate": { "taskId": "task-h", "contextId": "ctx-h", "status": { "state": state } } });
    out.push(push(
        "an unknown state",
        status(json!("TASK_STATE_SLEEPING")),
        400,
        &["status.state"],
    ));
    out.push(push(
        "TASK_STATE_UNSPECIFIED",
        status(json!("TASK_STATE_UNSPECIFIED")),
        400,
        &["status.state"],
    ));
    out.push(push("state 0", status(json!(0)), 400, &["status.state"]));
    out.push(push("state 99", status(json!(99)), 400, &["status.state"]));
    out.push(push("state null", status(Value::Null), 400, &["state"]));
    out.push(push(
        "state a huge number",
        status(json!(1e300)),
        400,
        &["state"],
    ));
    out.push(push("an empty object", json!({}), 400, &["StreamResponse"]));
    out.push(push(
        "two event kinds",
        json!({ "statusUpdate": {}, "artifactUpdate": {} }),
        400,
        &[],
    ));
    out.push(push("taskId a number", json!({ "artifactUpdate": { "taskId": 7, "contextId": "c", "artifact": { "artifactId": "a", "parts": [] } } }), 400, &["taskId"]));
    out.push(push(
        "artifact null",
        json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": null } }),
        400,
        &["artifact"],
    ));
    out.push(push("parts a string", json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": { "artifactId": "a", "parts": "x" } } }), 400, &["parts"]));
    out.push(push("metadata an array", json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": { "artifactId": "a", "parts": [], "metadata": [] } } }), 400, &["metadata"]));
    let many: Vec<Value> = (0..10_000).map(|i| exp(&format!("exp-{i}"))).collect();
    out.push(push(
        "10,000 expectations in one artifact",
        artifact(json!(many)),
        413,
        &["body_bytes"],
    ));
    let many_small: Vec<Value> = (0..10_000)
        .map(|i| json!({ "expectationId": format!("e{i}") }))
        .collect();
    out.push(push(
        "10,000 small expectations in one artifact",
        artifact(json!(many_small)),
        400,
        &["expectations_per_artifact", "10000"],
    ));
    out.push(
        case(
            "push: an agent id with a control character",
            "POST",
            "/v1/agents/book%00ing/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "push: a confusable agent id (Cyrillic o)",
            "POST",
            "/v1/agents/b%D0%BEoking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "push: an unknown agent",
            "POST",
            "/v1/agents/nobody/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["nobody"]),
    );
}
