//! The bench's in-process agent: the answers of `a2a-watcher bench-agent`
//! ([`crate::bench_agent::answer`]) served on 127.0.0.1 inside the bench's own runtime, with
//! keep-alive connections, and two controls the phases need: the arrival instant of each
//! `SendMessage` (lapse latency) and answers held while a switch is on (the slow agent).
//!
//! The bench is part of the release binary, so it has its own small agent rather than the test
//! crate's capture agent (`watcher_delivery::testing`, a test-only feature).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::Context;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::Value;

/// What the handler shares with its [`BenchAgent`].
struct Shared {
    /// Numbers the tasks it creates.
    tasks: AtomicU64,
    /// JSON-RPC requests received.
    requests: AtomicUsize,
    /// When each `SendMessage` arrived, if asked for.
    arrivals: Option<Arc<Mutex<Vec<SystemTime>>>>,
    /// While `true`, answers wait.
    held: tokio::sync::watch::Sender<bool>,
}

/// An agent on `127.0.0.1:0` answering JSON-RPC on `/`; stops when dropped.
pub(crate) struct BenchAgent {
    url: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl BenchAgent {
    /// Starts an agent; when `arrivals` is given, the instant each `SendMessage` arrives is
    /// pushed onto it.
    ///
    /// # Errors
    /// When 127.0.0.1:0 cannot be bound.
    pub(crate) async fn spawn(
        arrivals: Option<Arc<Mutex<Vec<SystemTime>>>>,
    ) -> anyhow::Result<BenchAgent> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("Failed to bind the bench's agent on 127.0.0.1")?;
        let url = format!("http://{}/", listener.local_addr()?);
        let shared = Arc::new(Shared {
            tasks: AtomicU64::new(0),
            requests: AtomicUsize::new(0),
            arrivals,
            held: tokio::sync::watch::channel(false).0,
        });
        let app = Router::new()
            .route("/", post(jsonrpc))
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            // A server error ends the agent; the bench then sees connection errors.
            let _ = axum::serve(listener, app).await;
        });
        Ok(BenchAgent {
            url,
            shared,
            server,
        })
    }

    /// Its base URL, e.g. `http://127.0.0.1:40123/`.
    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }

    /// Holds every answer (`true`) until released (`false`): a slow agent.
    pub(crate) fn hold(&self, on: bool) {
        self.shared.held.send_replace(on);
    }

    /// JSON-RPC requests received so far (held ones included).
    pub(crate) fn request_count(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

impl Drop for BenchAgent {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn jsonrpc(State(shared): State<Arc<Shared>>, Json(req): Json<Value>) -> Json<Value> {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    if req.get("method").and_then(Value::as_str) == Some("SendMessage") {
        if let Some(arrivals) = &shared.arrivals {
            arrivals
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(SystemTime::now());
        }
    }
    let answer = crate::bench_agent::answer(&req, &shared.tasks, None);
    let mut held = shared.held.subscribe();
    // Released, or the agent is gone: answer either way.
    let _ = held.wait_for(|on| !*on).await;
    Json(answer)
}
