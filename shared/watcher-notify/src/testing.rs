//! A receiver for tests (feature `test-utils`): a real HTTP server on 127.0.0.1 that records
//! each notification and checks its Standard Webhooks signature on its own (HMAC-SHA256 over
//! `{id}.{timestamp}.{body}`, written here, apart from [`crate::sign`], so a mistake there is
//! not repeated here).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;

/// The secret the channels sign with in these tests (the Standard Webhooks form).
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One request the receiver took.
#[derive(Debug, Clone)]
pub struct Received {
    /// `webhook-id`.
    pub id: String,
    /// Whether `webhook-signature` verified under [`SECRET`].
    pub verified: bool,
    /// The JSON body.
    pub body: Value,
    /// The status answered.
    pub status: u16,
}

/// A receiver on 127.0.0.1 answering `status` (settable) to every POST.
#[derive(Clone)]
pub struct Receiver {
    /// Its URL.
    pub url: String,
    status: Arc<AtomicU16>,
    seen: Arc<Mutex<Vec<Received>>>,
}

#[derive(Clone)]
struct RecvState {
    status: Arc<AtomicU16>,
    seen: Arc<Mutex<Vec<Received>>>,
}

fn verify(headers: &HeaderMap, body: &[u8]) -> bool {
    let get = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    let (id, ts, sig) = (
        get("webhook-id"),
        get("webhook-timestamp"),
        get("webhook-signature"),
    );
    let key = base64::engine::general_purpose::STANDARD
        .decode(SECRET.trim_start_matches("whsec_"))
        .unwrap_or_default();
    let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(&key) else {
        return false;
    };
    mac.update(format!("{id}.{ts}.").as_bytes());
    mac.update(body);
    let want = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    sig.split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .any(|s| s == want)
}

async fn take(State(st): State<RecvState>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let status = st.status.load(Ordering::SeqCst);
    st.seen.lock().unwrap().push(Received {
        id: headers
            .get("webhook-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string(),
        verified: verify(&headers, &body),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status,
    });
    StatusCode::from_u16(status).unwrap()
}

impl Receiver {
    /// Starts one answering 204.
    pub async fn start() -> Receiver {
        let status = Arc::new(AtomicU16::new(204));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(take))
            .with_state(RecvState {
                status: status.clone(),
                seen: seen.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url: format!("http://{addr}/hook"),
            status,
            seen,
        }
    }

    /// Answers `status` from now on.
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// Everything taken so far.
    pub fn seen(&self) -> Vec<Received> {
        self.seen.lock().unwrap().clone()
    }

    /// What was taken with a 2xx answer.
    pub fn accepted(&self) -> Vec<Received> {
        self.seen()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }
}
