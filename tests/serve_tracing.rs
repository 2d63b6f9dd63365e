//! The W3C `traceparent` of a push reaches the lapse task it causes, on `serve` over real HTTP
//! (docs/howto/tracing.md): the capture agent's `SendMessage` request carries the push's trace
//! id, with a parent id of its own per send; a push without one, or with an invalid one, starts
//! a new trace.

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use serde_json::Value;
use watcher_core::trace::TraceParent;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, CapturedRequest, Reply};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);
/// The trace and parent ids the pushes send (trace-context's own example).
const T: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const S: &str = "00f067aa0ba902b7";

/// Pushes one expectation `exp` (task `task-{exp}`) due at `due` with no grace, with a
/// `traceparent` header when one is given; asserts it was raised.
async fn push_traced(w: &Watcher, exp: &str, due: jiff::Timestamp, traceparent: Option<&str>) {
    let body = one_expectation(
        &format!("task-{exp}"),
        exp,
        &format!("PA-{exp}"),
        due,
        "PT0S",
    );
    let mut req = w
        .http()
        .post(w.url("/v1/agents/booking/push"))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&body);
    if let Some(tp) = traceparent {
        req = req.header("traceparent", tp);
    }
    let a = Answer::of(req).await;
    assert_eq!(a.body["raised"], serde_json::json!([exp]), "{a:?}");
}

/// The `SendMessage` requests the agent received for the lapse of `exp`, oldest first.
fn sends_of(requests: &[CapturedRequest], exp: &str) -> Vec<CapturedRequest> {
    requests
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
        .filter(|r| {
            r.message_id()
                .is_some_and(|m| m.starts_with(&format!("lapse:{exp}:")))
        })
        .cloned()
        .collect()
}

/// The `traceparent` a request carried, read as the spec reads it.
fn traceparent_of(r: &CapturedRequest) -> TraceParent {
    let header = r.header("traceparent").expect("a traceparent header");
    assert_eq!(header.len(), 55, "version 00 form: {header}");
    TraceParent::parse(header).unwrap_or_else(|| panic!("a valid traceparent: {header}"))
}

/// A push's valid `traceparent` is kept with the expectation across a restart (the SQLite
/// store), and its lapse task's request carries that trace id with a new parent id; a push
/// without one and a push with an invalid one (version `ff`) get a new trace each.
#[tokio::test]
async fn the_lapse_task_carries_the_push_trace() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_secs(3));
    push_traced(&w, "traced", due, Some(&format!("00-{T}-{S}-01"))).await;
    push_traced(&w, "plain", due, None).await;
    let bad_trace = "0af7651916cd43dd8448eb211c80319c";
    push_traced(&w, "bad", due, Some(&format!("ff-{bad_trace}-{S}-01"))).await;
    // The trace is read back from the database, not kept in memory.
    w.restart().await;
    w.all_sent(3, PATIENCE).await;

    let requests = agent.requests();
    let traced = sends_of(&requests, "traced");
    assert_eq!(traced.len(), 1, "{requests:#?}");
    let tp = traceparent_of(&traced[0]);
    assert_eq!(tp.trace_id_hex(), T);
    assert_ne!(
        tp.parent_id_hex(),
        S,
        "the send is its own span, not the pusher's"
    );
    assert_eq!(tp.flags(), 1, "sampled, as the push said");

    let plain = traceparent_of(&sends_of(&requests, "plain")[0]);
    let bad = traceparent_of(&sends_of(&requests, "bad")[0]);
    for other in [plain, bad] {
        assert_ne!(other.trace_id_hex(), T);
        assert_ne!(
            other.trace_id_hex(),
            bad_trace,
            "an invalid traceparent is ignored"
        );
    }
    assert_ne!(
        plain.trace_id(),
        bad.trace_id(),
        "each new trace has its own id"
    );
}

/// Each send of a lapse task is its own span: a send the agent refused (429) and the send after
/// it carry the same trace id, from the push, and different parent ids.
#[tokio::test]
async fn each_send_has_its_own_parent_id() {
    let agent = spawn_capture_agent(Behaviour::sequence(vec![
        Reply::status(429),
        Reply::task("task-1", TaskState::Submitted),
    ]))
    .await;
    let w = spawn_watcher(
        &agent,
        "[delivery]\nbackoff_base = \"PT0.05S\"\nbackoff_max = \"PT0.2S\"\n",
    )
    .await;
    let due = origin(Duration::from_millis(500));
    push_traced(&w, "retried", due, Some(&format!("00-{T}-{S}-01"))).await;
    let lapses: Vec<Value> = w.all_sent(1, PATIENCE).await;
    let sends = sends_of(&agent.requests(), "retried");
    assert_eq!(sends.len(), 2, "{lapses:#?}");
    let (first, second) = (traceparent_of(&sends[0]), traceparent_of(&sends[1]));
    assert_eq!(
        (first.trace_id_hex(), second.trace_id_hex()),
        (T.into(), T.into())
    );
    assert_ne!(first.parent_id(), second.parent_id());
}

/// An OTLP/HTTP receiver on 127.0.0.1: every `POST /v1/traces` body it got.
struct Receiver {
    url: String,
    bodies: std::sync::Arc<std::sync::Mutex<Vec<Vec<u8>>>>,
}

impl Receiver {
    async fn spawn() -> Receiver {
        let bodies = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = bodies.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    kept.lock().expect("not poisoned").push(body.to_vec());
                    // An empty ExportTraceServiceResponse.
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { url, bodies }
    }

    /// Whether some body holds each of `needles` (raw bytes: protobuf keeps ids as bytes and
    /// names as UTF-8).
    fn holds(&self, needles: &[&[u8]]) -> bool {
        let bodies = self.bodies.lock().expect("not poisoned");
        needles
            .iter()
            .all(|n| bodies.iter().any(|b| b.windows(n.len()).any(|w| w == *n)))
    }
}

/// With `OTEL_EXPORTER_OTLP_ENDPOINT` set, `serve` exports its spans in the push's trace: the
/// receiver gets spans with trace id T, among them the `ingest` span of the push and the `send`
/// span whose id is the parent id the agent received in its `traceparent`.
#[tokio::test]
async fn spans_are_exported_in_the_push_trace() {
    let receiver = Receiver::spawn().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    w.env = vec![
        ("OTEL_EXPORTER_OTLP_ENDPOINT".into(), receiver.url.clone()),
        ("OTEL_BSP_SCHEDULE_DELAY".into(), "100".into()),
    ];
    w.restart().await;
    let due = origin(Duration::from_millis(500));
    push_traced(&w, "exported", due, Some(&format!("00-{T}-{S}-01"))).await;
    w.all_sent(1, PATIENCE).await;
    let sent = traceparent_of(&sends_of(&agent.requests(), "exported")[0]);
    assert_eq!(sent.trace_id_hex(), T);
    let trace_id = sent.trace_id();
    let send_span_id = sent.parent_id();
    let exported = wait_until(
        || async { receiver.holds(&[&trace_id, &send_span_id, b"ingest", b"send", b"lapse_task"]) },
        PATIENCE,
    )
    .await;
    assert!(
        exported,
        "{} bodies received; serve's log:\n{}",
        receiver.bodies.lock().expect("not poisoned").len(),
        w.log()
    );
}
