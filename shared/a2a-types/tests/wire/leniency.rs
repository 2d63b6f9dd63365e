//! Leniency and strictness: empty strings, unknown fields and enums, oneofs enforced.

use super::*;

#[test]
fn empty_strings_are_absent() {
    let msg: Message = typed(
        "msg",
        json!({"messageId": "m", "contextId": "", "taskId": "", "role": "ROLE_USER",
               "parts": [{"text": "", "filename": "", "mediaType": ""}]}),
    );
    assert_eq!(msg.context_id, None);
    assert_eq!(msg.task_id, None);
    assert_eq!(
        msg.parts[0].content,
        PartContent::Text(String::new()),
        "empty text is still content"
    );
    assert_eq!(msg.parts[0].filename, None);
    assert_eq!(msg.parts[0].media_type, None);

    let task: Task = typed(
        "task",
        json!({"id": "t", "contextId": "", "status": {"state": "TASK_STATE_WORKING", "timestamp": ""}}),
    );
    assert_eq!(task.context_id, None);
    assert_eq!(task.status.timestamp, None);

    let cfg: TaskPushNotificationConfig = typed(
        "cfg",
        json!({"url": "http://x", "token": "", "id": "", "taskId": "", "tenant": ""}),
    );
    assert_eq!(cfg, TaskPushNotificationConfig::new("http://x"));
    assert_eq!(to_json(&cfg), json!({"url": "http://x"}));

    let wrapped: Option<String> =
        empty_string_as_none(&mut serde_json::Deserializer::from_str("\"\"")).expect("ok");
    assert_eq!(wrapped, None);
}

#[test]
fn unknown_fields_are_ignored() {
    let task: Task = typed(
        "task",
        json!({"id": "t", "kind": "task", "bogusField": [1, 2],
               "status": {"state": "TASK_STATE_FAILED", "future": {}},
               "history": [{"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x", "extra": 1}], "kind": "message"}]}),
    );
    assert_eq!(task.state(), TaskState::Failed);
    assert_eq!(task.history[0].parts[0].as_text(), Some("x"));
    let card_ext: AgentExtension = typed("ext", json!({"uri": "u", "required": true, "later": 1}));
    assert!(card_ext.required);
}

#[test]
fn unknown_enum_strings_become_unspecified() {
    for (raw, want) in [
        ("TASK_STATE_PAUSED", TaskState::Unspecified),
        ("paused", TaskState::Unspecified),
        ("Canceled", TaskState::Unspecified),
        ("task_state_canceled", TaskState::Unspecified),
        ("TASK_STATE_UNSPECIFIED", TaskState::Unspecified),
        ("TASK_STATE_AUTH_REQUIRED", TaskState::AuthRequired),
    ] {
        assert_eq!(typed::<TaskState>(raw, json!(raw)), want, "{raw}");
    }
    for bad in [
        json!(0),
        json!(9),
        json!(-1),
        json!(2.5),
        json!(true),
        json!(null),
    ] {
        assert_eq!(
            typed::<TaskState>("state", bad.clone()),
            TaskState::Unspecified,
            "{bad}"
        );
    }
    assert_eq!(typed::<Role>("role", json!("user")), Role::Unspecified);
    assert_eq!(
        typed::<Role>("role", json!("ROLE_ROBOT")),
        Role::Unspecified
    );
    assert_eq!(typed::<Role>("role", json!("ROLE_AGENT")), Role::Agent);
    let list: ListTasksRequest = typed("list", json!({"status": "paused"}));
    assert_eq!(list.status, Some(TaskState::Unspecified));
}

#[test]
fn task_state_methods_and_strings() {
    for state in ALL_STATES {
        assert_eq!(to_json(&state), json!(state.as_str()));
        assert_eq!(state.to_string(), state.as_str());
        assert_eq!(TaskState::from_wire_str(state.as_str()), state);
        assert_eq!(typed::<TaskState>("state", json!(state.as_str())), state);
        let classes = [
            state.is_terminal(),
            state.is_interrupted(),
            state.is_active(),
        ];
        let expected = usize::from(state != TaskState::Unspecified);
        assert_eq!(classes.iter().filter(|c| **c).count(), expected, "{state}");
    }
    let terminal: Vec<TaskState> = ALL_STATES.into_iter().filter(|s| s.is_terminal()).collect();
    assert_eq!(terminal, TERMINAL_STATES);
    assert_eq!(
        TERMINAL_STATES.map(TaskState::as_str),
        [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED"
        ]
    );
    assert!(TaskState::InputRequired.is_interrupted() && TaskState::AuthRequired.is_interrupted());
    assert_eq!(TaskState::from_wire_str("canceled"), TaskState::Unspecified);
    assert_eq!(Role::User.to_string(), "ROLE_USER");
    assert_eq!(TaskState::default(), TaskState::Unspecified);
}

#[test]
fn part_oneof_is_enforced() {
    let err = serde_json::from_value::<Part>(json!({"mediaType": "text/plain"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected exactly one of text, raw, url, data; found none"),
        "{err}"
    );
    let err = serde_json::from_value::<Part>(json!({"text": "a", "url": "http://x"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("found text and url"), "{err}");
    let err = serde_json::from_str::<Message>(
        r#"{"messageId":"m","role":"ROLE_USER","parts":[{"filename":"f"}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("found none"), "{err}");
    let null_data: Part = typed("part", json!({"data": null}));
    assert_eq!(null_data.content, PartContent::Data(Value::Null));
    assert_eq!(to_json(&null_data), json!({"data": null}));
}

#[test]
fn send_message_response_oneof_is_enforced() {
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();
    let err = serde_json::from_value::<SendMessageResponse>(task.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected exactly one of task, message; found none"),
        "{err}"
    );
    let msg = json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]});
    let err = serde_json::from_value::<SendMessageResponse>(json!({"task": task, "message": msg}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("found task and message"), "{err}");
    let reply: SendMessageResponse = typed("reply", json!({"message": msg, "other": 1}));
    assert!(reply.task().is_none());
    assert!(matches!(reply, SendMessageResponse::Message(ref m) if m.text() == "hi"));
    let err = serde_json::from_value::<SendMessageResponse>(json!({"task": {"id": "t"}}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SendMessageResponse.task: missing field `status`"),
        "{err}"
    );
}
