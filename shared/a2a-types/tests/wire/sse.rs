//! Server-sent event streams.

use super::*;

fn sse_events(name: &str) -> Vec<StreamResponse> {
    let responses: Vec<JsonRpcResponse> = typed(name, load(name));
    responses
        .into_iter()
        .map(|r| typed(name, r.into_result().expect("no error")))
        .collect()
}

#[test]
fn sse_15_send_streaming_message() {
    let events = sse_events("15-send-streaming-message.sse-events.json");
    let members: Vec<&str> = events.iter().map(StreamResponse::member_name).collect();
    assert_eq!(
        members,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    let states: Vec<TaskState> = events
        .iter()
        .filter_map(|e| e.status().map(|s| s.state))
        .collect();
    assert_eq!(
        states,
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed
        ]
    );
    assert!(events
        .iter()
        .all(|e| e.task_id() == Some("f0b35446-4efa-4d26-9a0c-9be3725aa3d2")));
}

#[test]
fn sse_17_subscribe_running_task() {
    let events = sse_events("17-subscribe-running-task.sse-events.json");
    assert_eq!(events.len(), 2);
    let StreamResponse::Task(snapshot) = &events[0] else {
        panic!("first event must be a task")
    };
    assert_eq!(snapshot.state(), TaskState::Working);
    assert_eq!(
        snapshot.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:34.380074Z")
    );
    let StreamResponse::StatusUpdate(last) = &events[1] else {
        panic!("statusUpdate expected")
    };
    assert_eq!(last.status.state, TaskState::Canceled);
    assert_eq!(
        last.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:35.764228Z")
    );
}
