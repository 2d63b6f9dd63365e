//! A2A 0.3 compatibility: state spellings, lenient payloads, the notification token header.

use super::*;

/// serve.md "Routes": the 1.0 names, the ProtoJSON enum numbers and the 0.3 names all mean the
/// same state.
#[test]
fn every_wire_form_of_a_state_means_the_same_state() {
    let forms = [
        ("TASK_STATE_SUBMITTED", 1, "submitted", TaskState::Submitted),
        ("TASK_STATE_WORKING", 2, "working", TaskState::Working),
        ("TASK_STATE_COMPLETED", 3, "completed", TaskState::Completed),
        ("TASK_STATE_FAILED", 4, "failed", TaskState::Failed),
        ("TASK_STATE_CANCELED", 5, "canceled", TaskState::Canceled),
        (
            "TASK_STATE_INPUT_REQUIRED",
            6,
            "input-required",
            TaskState::InputRequired,
        ),
        ("TASK_STATE_REJECTED", 7, "rejected", TaskState::Rejected),
        (
            "TASK_STATE_AUTH_REQUIRED",
            8,
            "auth-required",
            TaskState::AuthRequired,
        ),
    ];
    for (name, number, v03, want) in forms {
        assert_eq!(typed::<TaskState>(name, json!(name)), want);
        assert_eq!(typed::<TaskState>(name, json!(number)), want, "{number}");
        assert_eq!(typed::<TaskState>(name, json!(v03)), want, "{v03}");
        assert_eq!(
            serde_json::to_value(want).unwrap(),
            json!(name),
            "written as the 1.0 name"
        );
    }
}

#[test]
fn v03_payloads_decode_leniently() {
    let (method, params): (String, SendMessageRequest) =
        request_params("31-v03-compat-message-send.request.json");
    assert_eq!(method, "message/send");
    assert_eq!(
        params.message.role,
        Role::Unspecified,
        "\"user\" is not a 1.0 role"
    );
    assert_eq!(
        params.message.parts,
        [Part::text("hi from 0.3")],
        "`kind` ignored"
    );
    let task: Task = typed("31", result_of("31-v03-compat-message-send.response.json"));
    assert_eq!(task.id, "ef1d5fe9-4d54-4e18-b989-448686eb81b4");
    assert_eq!(
        task.state(),
        TaskState::Completed,
        "\"completed\" is the 0.3 name of TASK_STATE_COMPLETED"
    );
    assert_eq!(
        task.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:18.851132Z")
    );
    assert!(task.history.iter().all(|m| m.role == Role::Unspecified));
}

#[test]
fn headers_fixture_names_the_notification_token_header() {
    let headers = load("headers.json");
    let names: Vec<&str> = headers["07-push-webhook-post"]["headers"]
        .as_array()
        .expect("header list")
        .iter()
        .filter_map(|h| h[0].as_str())
        .collect();
    assert!(names
        .iter()
        .any(|n| n.eq_ignore_ascii_case(NOTIFICATION_TOKEN_HEADER)));
    let request = &headers["02-send-message"]["request"]["headers"];
    let version = request
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| {
            h[0].as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(A2A_VERSION_HEADER))
        })
        .and_then(|h| h[1].as_str());
    assert_eq!(version, Some(A2A_VERSION));
}
