//! Encoding shapes: how parts, stream responses and envelopes serialise.

use super::*;

#[test]
fn part_serialises_as_single_content_key() {
    assert_eq!(to_json(&Part::text("hi")), json!({"text": "hi"}));
    let mut file = Part::url("https://x/a.pdf");
    file.filename = Some("a.pdf".into());
    file.media_type = Some("application/pdf".into());
    assert_eq!(
        to_json(&file),
        json!({"url": "https://x/a.pdf", "mediaType": "application/pdf", "filename": "a.pdf"})
    );
    let data = Part::data(json!({"k": 1}));
    assert_eq!(to_json(&data), json!({"data": {"k": 1}}));
    let back: Part = typed("part", to_json(&data));
    assert_eq!(back, data);
}

#[test]
fn stream_response_serialises_under_its_member_key() {
    let mut status = TaskStatus::new(TaskState::Completed);
    status.timestamp = Some("2026-11-29T11:02:30.476790Z".into());
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: TASK_06.into(),
        context_id: CONTEXT_06.into(),
        status,
        metadata: None,
    });
    let encoded = to_json(&event);
    assert_eq!(encoded, load("07-push-webhook-post-4-statusUpdate.json"));
    assert_eq!(
        serde_json::to_string(&event).expect("string"),
        format!(
            r#"{{"statusUpdate":{{"taskId":"{TASK_06}","contextId":"{CONTEXT_06}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-29T11:02:30.476790Z"}}}}}}"#
        )
    );
    assert_eq!(
        StreamResponse::from_push_body(encoded).expect("decodes"),
        event
    );
}

#[test]
fn send_message_response_serialises_under_task_key() {
    let task = Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: TaskStatus::new(TaskState::Submitted),
        artifacts: Vec::new(),
        history: vec![Message::new("m1", Role::User, vec![Part::text("hi")])],
        metadata: None,
    };
    let encoded = to_json(&SendMessageResponse::Task(task.clone()));
    assert_eq!(
        encoded,
        json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"},
                        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}]}})
    );
    assert_eq!(
        typed::<SendMessageResponse>("r", encoded),
        SendMessageResponse::Task(task)
    );
}

#[test]
fn request_envelope_serialises_like_the_sdk() {
    let mut request = SendMessageRequest::new(Message::new(
        "msg-0004",
        Role::User,
        vec![Part::text("stream me")],
    ));
    request.configuration = Some(SendMessageConfiguration::default());
    let envelope = JsonRpcRequest::new(
        "f7d2b781-f830-4c1e-9520-1a19bd98d3a6",
        methods::SEND_STREAMING_MESSAGE,
        request,
    );
    assert_eq!(
        to_json(&envelope),
        load("15-send-streaming-message.request.json")
    );

    let ext = AgentExtension {
        uri: "u".into(),
        description: None,
        required: false,
        params: None,
    };
    assert_eq!(to_json(&ext), json!({"uri": "u"}));
    let ext = AgentExtension {
        required: true,
        ..ext
    };
    assert_eq!(to_json(&ext), json!({"uri": "u", "required": true}));

    let ok = JsonRpcResponse::success(json!(7), json!({"task": {}}));
    assert_eq!(
        to_json(&ok),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"task": {}}})
    );
    let err = JsonRpcResponse::failure(
        Value::Null,
        JsonRpcError::new(error_codes::PARSE_ERROR, "bad"),
    );
    assert_eq!(
        to_json(&err),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
    );
}
