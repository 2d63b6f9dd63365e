//! The push-config RPCs, cancel.

use super::*;

#[test]
fn push_config_rpcs_09_to_14_and_30() {
    let (method, created): (String, TaskPushNotificationConfig) =
        request_params("09-create-push-config.request.json");
    assert_eq!(method, methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG);
    assert_eq!(created.id.as_deref(), Some("cfg-1"));
    assert_eq!(
        created.task_id.as_deref(),
        Some("2d13e502-be8a-4961-937e-5e059859174b")
    );
    let echoed: TaskPushNotificationConfig =
        typed("09", result_of("09-create-push-config.response.json"));
    assert_eq!(echoed, created);
    let got: TaskPushNotificationConfig =
        typed("10", result_of("10-get-push-config.response.json"));
    assert_eq!(got, created);

    let (_, get_params): (String, TaskPushNotificationConfigId) =
        request_params("10-get-push-config.request.json");
    assert_eq!(get_params.id, "cfg-1");
    let list: ListTaskPushNotificationConfigsResponse =
        typed("11", result_of("11-list-push-configs.response.json"));
    assert_eq!(list.configs, [created]);
    assert_eq!(list.next_page_token, None);

    let (method, _): (String, TaskPushNotificationConfigId) =
        request_params("14-delete-push-config.request.json");
    assert_eq!(method, methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG);
    let deleted: JsonRpcResponse = typed("14", load("14-delete-push-config.response.json"));
    assert_eq!(
        deleted.result,
        Some(Value::Null),
        "explicit null result kept"
    );
    assert_eq!(deleted.clone().into_result(), Ok(Value::Null));
    assert_eq!(to_json(&deleted)["result"], Value::Null);
    assert!(to_json(&deleted)
        .as_object()
        .is_some_and(|o| o.contains_key("result")));

    let inline: ListTaskPushNotificationConfigsResponse = typed(
        "30",
        result_of("30-list-push-configs-created-inline.response.json"),
    );
    assert_eq!(inline.configs[0].id.as_deref(), Some(TASK_06));
    assert_eq!(inline.configs[0].token.as_deref(), Some("client-token-abc"));
}

#[test]
fn cancel_12_and_push_13() {
    let task: Task = typed("12", result_of("12-cancel-task-running.response.json"));
    assert_eq!(task.state(), TaskState::Canceled);
    assert!(task.state().is_terminal());
    match push_body("13-push-webhook-post-after-cancel-statusUpdate.json") {
        StreamResponse::StatusUpdate(e) => {
            assert_eq!(e.task_id, task.id);
            assert_eq!(e.status.state, TaskState::Canceled);
            assert_eq!(e.status.timestamp, task.status.timestamp);
        }
        other => panic!("expected statusUpdate, got {other:?}"),
    }
}
