//! Receivers for tests (feature `test-utils`): [`Receiver`], a real HTTP server on 127.0.0.1
//! that records each notification and checks its Standard Webhooks signature on its own
//! (HMAC-SHA256 over `{id}.{timestamp}.{body}`, written here, apart from [`crate::sign`], so a
//! mistake there is not repeated here); [`Hanging`], one that takes the request and never
//! answers; [`redirecting`], one that answers a redirect; [`VendorReceiver`], one standing in
//! for PagerDuty, Opsgenie or an Alertmanager (any path, `202`, the vendor's JSON answer).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
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
            .to_owned(),
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

/// A receiver on 127.0.0.1 that takes each connection, reads the request and never answers:
/// the sender waits for its timeout.
pub struct Hanging {
    /// Its URL.
    pub url: String,
    held: Arc<AtomicUsize>,
}

impl Hanging {
    /// Starts one.
    pub async fn start() -> Hanging {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let held = Arc::new(AtomicUsize::new(0));
        let count = held.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let count = count.clone();
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let mut counted = false;
                    // Read until the sender closes; answer nothing.
                    while socket.readable().await.is_ok() {
                        match socket.try_read(&mut buf) {
                            Ok(0) => break,
                            Ok(_) if !counted => {
                                counted = true;
                                count.fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(_) => {}
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(_) => break,
                        }
                    }
                    if counted {
                        count.fetch_sub(1, Ordering::SeqCst);
                    }
                });
            }
        });
        Hanging { url, held }
    }

    /// How many requests it holds now (taken, not answered, not closed by the sender).
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }
}

/// Starts a receiver on 127.0.0.1 answering every POST to `/hook` with `status` (a 3xx) and
/// `Location: {location}`; answers its URL.
pub async fn redirecting(status: u16, location: &str) -> String {
    let location = location.to_owned();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let location = location.clone();
            async move {
                (
                    StatusCode::from_u16(status).unwrap(),
                    [(axum::http::header::LOCATION, location)],
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// One request a [`VendorReceiver`] took.
#[derive(Debug, Clone)]
pub struct VendorRequest {
    /// The path and query (`/v2/alerts`, `/api/v2/alerts`).
    pub path: String,
    /// `authorization`, when sent.
    pub authorization: Option<String>,
    /// `content-type`, when sent.
    pub content_type: Option<String>,
    /// Whether a Standard Webhooks header (`webhook-id`) came along.
    pub webhook_headers: bool,
    /// The JSON body.
    pub body: Value,
    /// The status answered.
    pub status: u16,
}

/// A receiver on 127.0.0.1 standing in for PagerDuty, Opsgenie or an Alertmanager: takes a POST
/// on any path and answers `status` (settable; 202 at first) with a JSON `message` body, as the
/// vendors answer.
#[derive(Clone)]
pub struct VendorReceiver {
    /// Its base URL (`http://127.0.0.1:{port}`).
    pub url: String,
    status: Arc<AtomicU16>,
    seen: Arc<Mutex<Vec<VendorRequest>>>,
}

#[derive(Clone)]
struct VendorState {
    status: Arc<AtomicU16>,
    seen: Arc<Mutex<Vec<VendorRequest>>>,
}

async fn vendor_take(
    State(st): State<VendorState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let status = st.status.load(Ordering::SeqCst);
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    st.seen.lock().unwrap().push(VendorRequest {
        path: uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        webhook_headers: headers.contains_key("webhook-id"),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        status,
    });
    let message = match status {
        400 => {
            r#"{"status":"invalid event","message":"Event object is invalid","errors":["Length of 'routing_key' is incorrect (should be 32 characters)"]}"#
        }
        429 => {
            r#"{"status":"throttle event","message":"Requests for this service are arriving too quickly."}"#
        }
        _ => r#"{"status":"success","message":"Event processed"}"#,
    };
    (StatusCode::from_u16(status).unwrap(), message.to_owned())
}

impl VendorReceiver {
    /// Starts one answering 202.
    pub async fn start() -> VendorReceiver {
        let status = Arc::new(AtomicU16::new(202));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let app = axum::Router::new()
            .fallback(axum::routing::post(vendor_take))
            .with_state(VendorState {
                status: status.clone(),
                seen: seen.clone(),
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        VendorReceiver {
            url: format!("http://{addr}"),
            status,
            seen,
        }
    }

    /// Answers `status` from now on.
    pub fn answer(&self, status: u16) {
        self.status.store(status, Ordering::SeqCst);
    }

    /// Everything taken so far.
    pub fn seen(&self) -> Vec<VendorRequest> {
        self.seen.lock().unwrap().clone()
    }

    /// What was taken with a 2xx answer.
    pub fn accepted(&self) -> Vec<VendorRequest> {
        self.seen()
            .into_iter()
            .filter(|r| (200..300).contains(&r.status))
            .collect()
    }
}
