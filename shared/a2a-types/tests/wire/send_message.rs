//! SendMessage, GetTask and ListTasks requests and answers.

use super::*;

#[test]
fn send_message_02_request_and_response() {
    let (method, params): (String, SendMessageRequest) =
        request_params("02-send-message.request.json");
    assert_eq!(method, methods::SEND_MESSAGE);
    let msg = &params.message;
    assert_eq!(msg.message_id, "msg-0001");
    assert_eq!(msg.role, Role::User);
    assert_eq!(msg.parts, [Part::text("hello agent")]);
    assert_eq!(msg.extensions, ["https://example.com/ext/demo/v1"]);
    let meta = msg.metadata.as_ref().expect("metadata");
    assert_eq!(
        meta["https://example.com/ext/demo/v1"],
        json!({"demo": true})
    );
    let config = params.configuration.as_ref().expect("configuration");
    assert_eq!(config.accepted_output_modes, ["text/plain"]);
    assert_eq!(config.history_length, Some(10));
    assert_eq!(config.return_immediately, None);
    assert!(config.task_push_notification_config.is_none());

    let task = send_message_task("02-send-message.response.json");
    assert_eq!(task.id, "eeea7f04-b953-4f99-99b7-a576e307ac6f");
    assert_eq!(
        task.context_id.as_deref(),
        Some("58e94865-262d-4417-9b88-5290a9ab3f9a")
    );
    assert_eq!(task.state(), TaskState::Completed);
    assert_eq!(
        task.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.366186Z")
    );
    let artifact = task.artifact("artifact-1").expect("artifact");
    assert_eq!(artifact.name.as_deref(), Some("result"));
    assert_eq!(artifact.parts[0].as_text(), Some("echo: hello agent"));
    let roles: Vec<Role> = task.history.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Agent]);
    assert_eq!(task.history[1].text(), "working...");
}

#[test]
fn get_task_03_is_the_same_task_as_02() {
    let (method, params): (String, GetTaskRequest) = request_params("03-get-task.request.json");
    assert_eq!(method, methods::GET_TASK);
    assert_eq!(params.history_length, Some(5));
    let task: Task = typed("03", result_of("03-get-task.response.json"));
    assert_eq!(task.id, params.id);
    assert_eq!(task, send_message_task("02-send-message.response.json"));
}

#[test]
fn list_tasks_05_normalises_explicit_defaults() {
    let list: ListTasksResponse = typed("05", result_of("05-list-tasks.response.json"));
    assert_eq!(list.next_page_token, None, "\"\" next page token is absent");
    assert_eq!(list.page_size, Some(10));
    assert_eq!(list.total_size, Some(1));
    assert_eq!(list.tasks.len(), 1);
    let listed = &list.tasks[0];
    let part = &listed.history[0].parts[0];
    assert_eq!(part.filename, None);
    assert_eq!(part.media_type, None);
    assert!(listed.history[1].extensions.is_empty());
    assert!(listed.artifacts.is_empty(), "includeArtifacts absent");
    // Same history as GetTask, once the explicit empties are normalised.
    let got: Task = typed("03", result_of("03-get-task.response.json"));
    assert_eq!(listed.history, got.history);
}

#[test]
fn send_message_06_inline_push_config() {
    let (_, params): (String, SendMessageRequest) =
        request_params("06-send-message-with-push-config.request.json");
    let cfg = params
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .expect("push config");
    assert_eq!(cfg.url, "http://127.0.0.1:41242/webhook");
    assert_eq!(cfg.token.as_deref(), Some("client-token-abc"));
    assert_eq!(cfg.task_id, None);
    assert_eq!(cfg.id, None);
    let auth = cfg.authentication.expect("authentication");
    assert_eq!(auth.scheme, "Bearer");
    assert_eq!(auth.credentials.as_deref(), Some("secret-cred-xyz"));

    let task = send_message_task("06-send-message-with-push-config.response.json");
    assert_eq!(task.id, TASK_06);
    assert_eq!(task.state(), TaskState::Completed);
}

#[test]
fn send_message_08_return_immediately() {
    let (_, params): (String, SendMessageRequest) =
        request_params("08-send-message-return-immediately.request.json");
    assert_eq!(
        params.configuration.and_then(|c| c.return_immediately),
        Some(true)
    );
    let task = send_message_task("08-send-message-return-immediately.response.json");
    assert_eq!(task.state(), TaskState::Submitted);
    assert_eq!(task.status.timestamp, None);
    assert_eq!(task.history.len(), 1);
}

#[test]
fn send_message_24_all_part_kinds() {
    let (_, params): (String, SendMessageRequest) =
        request_params("24-send-message-all-part-kinds.request.json");
    let parts = &params.message.parts;
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0].content, PartContent::Text("with data".into()));
    assert_eq!(parts[1].content, PartContent::Data(json!({"k": [1, 2]})));
    assert_eq!(parts[1].media_type.as_deref(), Some("application/json"));
    assert_eq!(
        parts[2].content,
        PartContent::Url("https://example.com/a.pdf".into())
    );
    assert_eq!(parts[2].filename.as_deref(), Some("a.pdf"));
    assert_eq!(parts[2].media_type.as_deref(), Some("application/pdf"));
    assert_eq!(parts[3].content, PartContent::Raw("aGVsbG8=".into()));
    assert_eq!(parts[3].filename.as_deref(), Some("h.txt"));
    let keys: Vec<&str> = parts.iter().map(|p| p.content.key()).collect();
    assert_eq!(keys, ["text", "data", "url", "raw"]);

    let task = send_message_task("24-send-message-all-part-kinds.response.json");
    let echoed = &task.history[0].parts;
    assert_eq!(
        echoed[1].content,
        PartContent::Data(json!({"k": [1.0, 2.0]}))
    );
    assert_eq!(echoed[3], parts[3]);
}

#[test]
fn multi_turn_26_27_input_required_then_completed() {
    let first = send_message_task("26-multi-turn-1-input-required.response.json");
    assert_eq!(first.state(), TaskState::InputRequired);
    assert!(first.state().is_interrupted() && !first.state().is_terminal());
    let question = first.status.message.as_ref().expect("status message");
    assert_eq!(question.role, Role::Agent);
    assert_eq!(question.text(), "Which city?");

    let (_, params): (String, SendMessageRequest) =
        request_params("27-multi-turn-2-continue-task-historyLength0.request.json");
    assert_eq!(params.message.task_id.as_deref(), Some(first.id.as_str()));
    assert_eq!(params.message.context_id, first.context_id);
    assert_eq!(params.configuration.and_then(|c| c.history_length), Some(0));
    let second = send_message_task("27-multi-turn-2-continue-task-historyLength0.response.json");
    assert_eq!(second.id, first.id);
    assert_eq!(second.state(), TaskState::Completed);
    assert!(second.history.is_empty());
    assert_eq!(second.artifacts[0].parts[0].as_text(), Some("echo: Paris"));
}

#[test]
fn list_tasks_28_filtered_paged() {
    let (_, params): (String, ListTasksRequest) =
        request_params("28-list-tasks-filtered-paged.request.json");
    assert_eq!(params.status, Some(TaskState::Completed));
    assert_eq!(params.page_size, Some(2));
    assert_eq!(params.include_artifacts, Some(true));
    assert_eq!(params.history_length, Some(1));
    let list: ListTasksResponse = typed(
        "28",
        result_of("28-list-tasks-filtered-paged.response.json"),
    );
    assert_eq!(list.tasks.len(), 2);
    assert_eq!(list.total_size, Some(7));
    assert!(list
        .next_page_token
        .as_deref()
        .is_some_and(|t| t.starts_with("eyJ0cyI6")));
    let artifact = &list.tasks[0].artifacts[0];
    assert_eq!(artifact.description, None);
    assert!(artifact.extensions.is_empty());
    assert!(list.tasks.iter().all(|t| t.state() == TaskState::Completed));
}
