//! Unit tests of the A2A client: answers read, errors classified, `Retry-After` and `ListTasks`
//! pages.

use super::*;
use serde_json::json;

fn interpret(status: u16, body: &str) -> Result<SendOutcome, DeliveryError> {
    interpret_response(
        StatusCode::from_u16(status).unwrap(),
        &HeaderMap::new(),
        body.as_bytes(),
        "m-1",
    )
}

fn rpc_error(code: i64) -> String {
    json!({"jsonrpc":"2.0","id":"m-1","error":{"code":code,"message":"boom"}}).to_string()
}

#[test]
fn results_are_tasks_messages_or_unrecognised() {
    let task = json!({"jsonrpc":"2.0","id":"m-1","result":{"task":{
        "id":"t-1","contextId":"c","status":{"state":"TASK_STATE_SUBMITTED"}}}});
    assert_eq!(
        interpret(200, &task.to_string()).unwrap(),
        SendOutcome::Task {
            id: "t-1".into(),
            state: TaskState::Submitted
        }
    );
    let msg = json!({"jsonrpc":"2.0","id":"m-1","result":{"message":{
        "messageId":"r-1","role":"ROLE_AGENT","parts":[{"text":"ok"}]}}});
    assert_eq!(
        interpret(200, &msg.to_string()).unwrap(),
        SendOutcome::Message {
            message_id: "r-1".into()
        }
    );
    let odd = json!({"jsonrpc":"2.0","id":"m-1","result":{"weird":1}});
    assert!(matches!(
        interpret(200, &odd.to_string()).unwrap(),
        SendOutcome::Unrecognised { .. }
    ));
}

#[test]
fn json_rpc_errors_follow_is_permanent() {
    for code in [-32700, -32600, -32601, -32602, -32001, -32005, -32009] {
        let e = interpret(200, &rpc_error(code)).unwrap_err();
        assert!(!e.is_retryable(), "{code}");
        assert!(e.describe().contains("boom"), "{}", e.describe());
        let source = e.source().expect("source kept");
        assert!(source.downcast_ref::<JsonRpcError>().is_some());
    }
    for code in [-32603, -32000, -32050, 1] {
        assert!(interpret(200, &rpc_error(code)).unwrap_err().is_retryable());
    }
}

#[test]
fn http_statuses_are_classified() {
    for status in [500, 502, 503, 504, 408, 429] {
        assert!(
            interpret(status, "<html>down</html>")
                .unwrap_err()
                .is_retryable(),
            "{status}"
        );
    }
    for status in [400, 401, 403, 404, 405, 410, 413, 301, 302, 307] {
        assert!(
            !interpret(status, "nope").unwrap_err().is_retryable(),
            "{status}"
        );
    }
    // A JSON-RPC error in a non-2xx body is shown, the status decides.
    let e = interpret(500, &rpc_error(-32602)).unwrap_err();
    assert!(e.is_retryable());
    assert!(e.reason().contains("-32602"), "{}", e.reason());
}

/// A 5xx, or a transient JSON-RPC error, means the agent (or a proxy in front of it) handled the
/// request and may have created the task: the attempt is ambiguous. 408 and 429 refuse the
/// request unhandled, and a permanent error is an outcome: neither is.
#[test]
fn answers_that_may_follow_a_received_request_are_marked() {
    for status in [500, 502, 503, 504] {
        let e = interpret(status, "<html>down</html>").unwrap_err();
        assert!(e.maybe_received(), "{status}");
    }
    for status in [408, 429] {
        let e = interpret(status, "slow down").unwrap_err();
        assert!(e.is_retryable() && !e.maybe_received(), "{status}");
    }
    assert!(interpret(200, &rpc_error(-32603))
        .unwrap_err()
        .maybe_received());
    assert!(!interpret(200, &rpc_error(-32001))
        .unwrap_err()
        .maybe_received());
    assert!(!interpret(404, "nope").unwrap_err().maybe_received());
}

/// The agent's JSON-RPC error is at hand whatever the HTTP status (the lifecycle probe records
/// it as the method's answer); a transport failure or an answer that is not JSON-RPC has none.
#[test]
fn the_json_rpc_error_the_agent_answered_is_kept_whatever_the_status() {
    for status in [200, 404, 500] {
        let e = interpret(status, &rpc_error(-32001)).unwrap_err();
        let error = e.rpc_error().unwrap_or_else(|| panic!("{status}: {e:?}"));
        assert_eq!((error.code, error.message.as_str()), (-32001, "boom"));
        // Named once in the description, the source not repeated.
        assert_eq!(
            e.describe().matches("JSON-RPC error -32001").count(),
            1,
            "{}",
            e.describe()
        );
    }
    for (status, body) in [(404, "<html>nope</html>"), (200, "not json"), (503, "")] {
        assert!(
            interpret(status, body).unwrap_err().rpc_error().is_none(),
            "{status} {body}"
        );
    }
}

/// A method A2A 0.3 has no name for is refused before anything is sent.
#[tokio::test]
async fn a_request_0_3_has_no_method_for_is_refused_unsent() {
    let client = A2aClient::with_defaults().unwrap();
    // Nothing listens on port 1: a request sent would be a transport error, not this one.
    let endpoint = AgentEndpoint::configured("http://127.0.0.1:1/", None).speaking(Protocol::V03);
    let e = client
        .request(
            &endpoint,
            methods::LIST_TASKS,
            &a2a_types::rpc::ListTasksRequest::default(),
            "list",
        )
        .await
        .unwrap_err();
    assert!(!e.is_retryable());
    assert_eq!(e.reason(), "an A2A 0.3 agent offers no ListTasks");
}

#[test]
fn a_2xx_that_is_not_json_rpc_is_permanent() {
    for body in [
        "",
        "<html>ok</html>",
        "{}",
        "[1,2]",
        "{\"jsonrpc\":\"2.0\"}",
    ] {
        let e = interpret(200, body).unwrap_err();
        assert!(!e.is_retryable(), "{body:?}");
    }
    let e = interpret(200, "not json").unwrap_err();
    assert!(e.source().unwrap().is::<serde_json::Error>());
}

#[test]
fn retry_after_seconds_are_kept() {
    let mut h = HeaderMap::new();
    h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
    let e = interpret_response(StatusCode::TOO_MANY_REQUESTS, &h, b"", "m").unwrap_err();
    assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
}

#[test]
fn retry_after_http_dates_are_read_against_now() {
    let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_717); // 08:48:37
    let at = |value: &'static str| {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static(value));
        retry_after(&h, now)
    };
    // RFC 9110 §5.6.7's three forms of the same instant, a minute after `now`.
    for value in [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ] {
        assert_eq!(at(value), Some(Duration::from_secs(60)), "{value}");
    }
    assert_eq!(
        at("Sun, 06 Nov 1994 08:00:00 GMT"),
        Some(Duration::ZERO),
        "a date already past asks for no wait"
    );
    assert_eq!(at(" 30 "), Some(Duration::from_secs(30)));
    assert_eq!(at("soon"), None);
    assert_eq!(at("-5"), None);
}

#[test]
fn an_http_date_retry_after_reaches_the_error() {
    let mut h = HeaderMap::new();
    let in_an_hour = std::time::SystemTime::now() + Duration::from_secs(3600);
    h.insert(
        RETRY_AFTER,
        HeaderValue::from_str(&httpdate::fmt_http_date(in_an_hour)).unwrap(),
    );
    let e = interpret_response(StatusCode::SERVICE_UNAVAILABLE, &h, b"", "m").unwrap_err();
    let asked = e.retry_after().expect("the date is read");
    assert!(
        asked > Duration::from_secs(3590) && asked <= Duration::from_secs(3600),
        "{asked:?}"
    );
}

#[test]
fn snippets_are_short_and_single_line() {
    let long = "x\n".repeat(500);
    let s = snippet(long.as_bytes());
    assert!(!s.contains('\n'));
    assert!(s.chars().count() <= 201);
}
