//! Push webhook bodies: the sequence, bare tasks, unknown keys, errors that name the problem.

use super::*;

#[test]
fn push_webhook_07_sequence() {
    let events: Vec<StreamResponse> = [
        "07-push-webhook-post-1-task.json",
        "07-push-webhook-post-2-statusUpdate.json",
        "07-push-webhook-post-3-artifactUpdate.json",
        "07-push-webhook-post-4-statusUpdate.json",
    ]
    .into_iter()
    .map(push_body)
    .collect();
    let members: Vec<&str> = events.iter().map(StreamResponse::member_name).collect();
    assert_eq!(
        members,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    assert!(events.iter().all(|e| e.task_id() == Some(TASK_06)));
    assert!(events.iter().all(|e| e.context_id() == Some(CONTEXT_06)));

    let StreamResponse::Task(task) = &events[0] else {
        panic!("not a task")
    };
    assert_eq!(task.state(), TaskState::Submitted);
    assert_eq!(task.status.timestamp, None);
    assert_eq!(task.history[0].message_id, "msg-0002");

    let StreamResponse::StatusUpdate(working) = &events[1] else {
        panic!("not a statusUpdate")
    };
    assert_eq!(working.status.state, TaskState::Working);
    assert_eq!(
        working.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.476696Z")
    );
    let msg = working.status.message.as_ref().expect("status message");
    assert_eq!((msg.role, msg.text().as_str()), (Role::Agent, "working..."));

    let StreamResponse::ArtifactUpdate(art) = &events[2] else {
        panic!("not an artifactUpdate")
    };
    assert_eq!(art.last_chunk, Some(true));
    assert_eq!(art.append, None);
    assert_eq!(art.artifact.artifact_id, "artifact-1");
    assert_eq!(art.artifact.parts[0].as_text(), Some("echo: push please"));

    let StreamResponse::StatusUpdate(done) = &events[3] else {
        panic!("not a statusUpdate")
    };
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(
        done.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.476790Z")
    );
    assert_eq!(done.status.message, None);
    assert_eq!(
        events[3].status().map(|s| s.state),
        Some(TaskState::Completed)
    );
}

#[test]
fn from_push_body_accepts_a_bare_task() {
    let mut body = load("07-push-webhook-post-1-task.json")["task"].clone();
    body["kind"] = json!("task"); // unknown sibling keys are ignored
    match StreamResponse::from_push_body(body) {
        Ok(StreamResponse::Task(t)) => {
            assert_eq!(t.id, TASK_06);
            assert_eq!(t.state(), TaskState::Submitted);
        }
        other => panic!("bare task not accepted: {other:?}"),
    }
}

#[test]
fn from_push_body_ignores_unknown_sibling_keys() {
    let mut body = load("07-push-webhook-post-4-statusUpdate.json");
    body["bogusField"] = json!({"x": 1});
    body["task"] = Value::Null; // null member counts as absent
    let event = StreamResponse::from_push_body(body).expect("decodes");
    assert_eq!(event.member_name(), "statusUpdate");
}

#[test]
fn from_push_body_errors_name_the_problem() {
    let update = load("07-push-webhook-post-4-statusUpdate.json")["statusUpdate"].clone();
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();

    let two =
        StreamResponse::from_push_body(json!({"task": task, "statusUpdate": update})).unwrap_err();
    let text = two.to_string();
    assert!(
        text.contains("expected exactly one of task, message, statusUpdate, artifactUpdate"),
        "{text}"
    );
    assert!(text.contains("found task and statusUpdate"), "{text}");

    let none = StreamResponse::from_push_body(json!({"foo": 1})).unwrap_err();
    let text = none.to_string();
    assert!(
        text.contains("expected exactly one of task, message, statusUpdate, artifactUpdate"),
        "{text}"
    );
    assert!(text.contains("found none"), "{text}");

    let array = StreamResponse::from_push_body(json!([1])).unwrap_err();
    assert_eq!(
        array.to_string(),
        "StreamResponse must be a JSON object, found an array"
    );

    let mut missing_state = update.clone();
    missing_state["status"]
        .as_object_mut()
        .expect("status")
        .remove("state");
    let bad = StreamResponse::from_push_body(json!({ "statusUpdate": missing_state })).unwrap_err();
    let text = bad.to_string();
    assert!(text.starts_with("StreamResponse.statusUpdate: "), "{text}");
    assert!(text.contains("missing field `state`"), "{text}");
    assert!(matches!(
        bad,
        PushBodyError::InvalidMember {
            member: "statusUpdate",
            ..
        }
    ));

    // A ProtoJSON enum number is a state (serve.md "Routes"): 3 is TASK_STATE_COMPLETED.
    let mut numbered = update;
    numbered["status"]["state"] = json!(3);
    let StreamResponse::StatusUpdate(u) =
        StreamResponse::from_push_body(json!({ "statusUpdate": numbered })).unwrap()
    else {
        panic!("a status update")
    };
    assert_eq!(u.status.state, TaskState::Completed);

    let bad_bare = StreamResponse::from_push_body(json!({"id": "t", "status": {}})).unwrap_err();
    assert!(
        matches!(bad_bare, PushBodyError::InvalidBareTask { .. }),
        "{bad_bare}"
    );
    assert!(
        bad_bare.to_string().contains("missing field `state`"),
        "{bad_bare}"
    );
}

#[test]
fn strict_stream_response_rejects_bare_task_and_two_members() {
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();
    let err = serde_json::from_value::<StreamResponse>(task)
        .unwrap_err()
        .to_string();
    assert!(err.contains("found none"), "{err}");
    let err = serde_json::from_str::<StreamResponse>(r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]},"artifactUpdate":{}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("found message and artifactUpdate"), "{err}");
    let ok: StreamResponse = serde_json::from_str(
        r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]},"extra":true}"#,
    )
    .expect("message event");
    assert_eq!(ok.task_id(), None);
}
