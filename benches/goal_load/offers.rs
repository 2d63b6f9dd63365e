//! What the driver offers the HTTP API: the requests (a push raising expectations, a fact), sent
//! and sent again when refused, what each stream was answered, and the steady window's two
//! streams on a clock.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use backoff::Backoff;
use serde_json::{json, Value};

use super::agents::agent_id;
use super::measure::{quantile, round};
use super::options::Options;
use super::{epoch, instant, URI};

/// What the API answered one stream (raises, facts, or the preload's pushes).
#[derive(Debug, Default)]
pub(crate) struct Stream {
    pub(crate) offered: AtomicUsize,
    /// Offered while `in_flight` requests were unanswered, so not sent.
    pub(crate) skipped: AtomicUsize,
    /// Whether a 500 is sent again too (the preload's: the local HTTP API answers a throttled
    /// Lambda invocation 500, as API Gateway does, and the burst and backlog must be raised).
    pub(crate) retry_500: bool,
    /// Requests sent (attempts, retries included): API Gateway requests.
    pub(crate) requests: AtomicUsize,
    pub(crate) accepted: AtomicUsize,
    /// Answers sent again: 429 and 503, and 500 where retried.
    refused: AtomicUsize,
    /// Other answers and transport errors (not retried), and refusals not sent again in time.
    failed: AtomicUsize,
    /// Microseconds of each accepted request, first attempt to answer.
    latencies: Mutex<Vec<f64>>,
    /// Answers by HTTP status (0: no answer, a transport error).
    statuses: Mutex<BTreeMap<u16, usize>>,
}

/// The statuses every stream's summary lists, answered or not: accepted, throttled (the HTTP
/// API stage's 429, or the deployment's own), a throttled Lambda as API Gateway answers it, the
/// deployment's "come back later".
const STATUSES: [u16; 4] = [200, 429, 500, 503];

impl Stream {
    /// A stream whose 500s are sent again too (see [`Stream::retry_500`]).
    pub(crate) fn retrying_500() -> Stream {
        Stream {
            retry_500: true,
            ..Stream::default()
        }
    }

    /// The stream's figures over `seconds`, as the JSON line gives them.
    pub(crate) fn summary(&self, seconds: f64) -> Value {
        let mut l = self
            .latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        l.sort_by(f64::total_cmp);
        let accepted = self.accepted.load(Ordering::Relaxed);
        let mut statuses = self
            .statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for s in STATUSES {
            statuses.entry(s).or_default();
        }
        json!({
            "offered": self.offered.load(Ordering::Relaxed),
            "skipped_api_busy": self.skipped.load(Ordering::Relaxed),
            "requests": self.requests.load(Ordering::Relaxed),
            "accepted": accepted,
            "accepted_per_second": round(accepted as f64 / seconds.max(1e-9), 2),
            "refused_then_retried": self.refused.load(Ordering::Relaxed),
            "retries_500": self.retry_500,
            "failed": self.failed.load(Ordering::Relaxed),
            "statuses": statuses,
            "answer_ms_p50": round(quantile(&l, 0.5) / 1000.0, 1),
            "answer_ms_p99": round(quantile(&l, 0.99) / 1000.0, 1),
        })
    }
}

/// The wait before sending a refused request again when its answer says no `Retry-After` (the
/// HTTP API stage's own 429 does not; a throttled Lambda's 500 neither): the shared policy,
/// exponential backoff with full jitter (the AWS SDKs' standard retry mode), from at most 1 s
/// doubling to at most 5 s. The attempts are bounded by each request's deadline, not by count.
const RETRY: Backoff = Backoff {
    base: Duration::from_secs(1),
    cap: Duration::from_secs(5),
    max_attempts: u32::MAX,
};

/// The `Retry-After` of an answer, in whole seconds, kept within 1 to 5 s (None without one, or
/// in a form other than seconds).
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let secs = headers
        .get("retry-after")?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(Duration::from_secs(secs.clamp(1, 5)))
}

/// Sends `body` to `url` with `auth` (a header name and value) and answers whether it was
/// accepted (200). A 429 or a 503 is sent again (a 500 too with `retry_500` or for a stream
/// that says so: the lapsing raises and the preload, which must be raised to be measured) after
/// its `Retry-After`, or after [`RETRY`]'s backoff when it has none, while the next attempt
/// would start before `until`. Every attempt's status is counted in `stream`.
pub(crate) async fn send(
    http: &reqwest::Client,
    url: &str,
    auth: (&str, &str),
    body: &Value,
    stream: &Stream,
    until: Instant,
    retry_500: bool,
) -> bool {
    let started = Instant::now();
    let mut retries = 0u32;
    loop {
        stream.requests.fetch_add(1, Ordering::Relaxed);
        let answer = http
            .post(url)
            .header(auth.0, auth.1)
            .json(body)
            .timeout(Duration::from_secs(60))
            .send()
            .await;
        let status = answer.as_ref().map_or(0, |a| a.status().as_u16());
        *stream
            .statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(status)
            .or_default() += 1;
        let again =
            matches!(status, 429 | 503) || (status == 500 && (stream.retry_500 || retry_500));
        match answer {
            Ok(_) if status == 200 => {
                stream.accepted.fetch_add(1, Ordering::Relaxed);
                stream
                    .latencies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(started.elapsed().as_secs_f64() * 1e6);
                return true;
            }
            Ok(a) if again => {
                stream.refused.fetch_add(1, Ordering::Relaxed);
                retries = retries.saturating_add(1);
                let wait = retry_after(a.headers()).unwrap_or_else(|| RETRY.delay(retries));
                if Instant::now() + wait >= until {
                    stream.failed.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
                tokio::time::sleep(wait).await;
            }
            Ok(_) | Err(_) => {
                stream.failed.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
    }
}

/// Sends one push from agent `agent` (its push token) to the API at `api`, as [`send`]: the one
/// way the preload, the probe and the steady raises send theirs.
pub(crate) async fn push(
    http: &reqwest::Client,
    api: &str,
    agent: &str,
    body: &Value,
    stream: &Stream,
    until: Instant,
    retry_500: bool,
) -> bool {
    let token = format!("push-{agent}");
    send(
        http,
        &format!("{api}/v1/agents/{agent}/push"),
        ("X-A2A-Notification-Token", &token),
        body,
        stream,
        until,
        retry_500,
    )
    .await
}

/// A push from agent `agent`'s task `task` raising `each` (expectation id, shipment), all due at
/// `due` (epoch seconds) with no grace, each satisfied by its shipment's manifest.
pub(crate) fn push_body(task: &str, each: &[(String, String)], due: i64) -> Value {
    let expectations: Vec<Value> = each
        .iter()
        .map(|(id, shipment)| {
            json!({
                "expectationId": id, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": shipment },
                "expects": format!("the airline manifest for {shipment}"),
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{shipment}") },
                "dueAt": instant(due), "grace": "PT0S", "basis": "observed"
            })
        })
        .collect();
    json!({ "artifactUpdate": {
        "taskId": task, "contextId": format!("ctx-{task}"),
        "artifact": {
            "artifactId": format!("artifact-{task}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": expectations } }
        }
    } })
}

/// The manifest fact of `shipment`, observed at `observed` (epoch seconds).
fn fact_body(shipment: &str, observed: i64) -> Value {
    json!({
        "factKey": format!("shipment.manifest.received:{shipment}"),
        "observedAt": instant(observed),
        "subject": { "type": "shipment", "id": shipment },
    })
}

/// An expectation id carrying its group (`s` steady, `b` burst, `k` backlog), a number and its
/// `dueAt` in epoch seconds, so each arrival is matched without a table.
pub(crate) fn lapsing_id(group: char, n: usize, due: i64) -> String {
    format!("{group}{n}-{due}")
}

/// The lapses due: expectation id → (group, dueAt).
pub(crate) type Due = Mutex<HashMap<String, (char, i64)>>;

/// The steady window: `o.rate()` raises and as many facts a second for `o.duration` seconds
/// over `agents` (round robin), `o.lapse_rate()` of the raises a second due `lead` seconds after
/// they are sent (the others due a day on, each satisfied by a fact about two seconds later);
/// the lapsing ones accepted go into `due_set`. Each stream keeps at most `o.in_flight`
/// requests in flight: when the API cannot keep up, the offered rate falls and the report says
/// so.
#[allow(
    clippy::too_many_arguments,
    reason = "the window's parameters, each spelled out"
)]
pub(crate) async fn steady(
    http: &reqwest::Client,
    api: &str,
    o: &Options,
    agents: &[usize],
    due_set: &Arc<Due>,
    raises: &Arc<Stream>,
    facts: &Arc<Stream>,
    lead: i64,
) {
    let rate = o.rate();
    let lapse_every = rate / o.lapse_rate();
    let total = (rate * o.duration as f64).round() as usize;
    let start = Instant::now();
    // Which raises were accepted and satisfiable: the fact about them is sent then.
    let satisfiable: Arc<Mutex<HashSet<usize>>> = Arc::default();
    let raise_sem = Arc::new(tokio::sync::Semaphore::new(o.in_flight));
    let fact_sem = Arc::new(tokio::sync::Semaphore::new(o.in_flight));
    let fact_lag = 2.0;
    // Refused requests are retried until the window ends (a lapsing raise: until 2 s before
    // its due instant, below `lead`).
    let window_end = start + Duration::from_secs(o.duration);
    let mut tasks = Vec::new();
    let mut next_raise = 0usize;
    let mut next_fact = 0usize;
    while next_raise < total || next_fact < total {
        let t = start.elapsed().as_secs_f64();
        let raise_at = next_raise as f64 / rate;
        let fact_at = next_fact as f64 / rate + fact_lag;
        if next_raise < total && raise_at <= t {
            let i = next_raise;
            next_raise += 1;
            let agent = agent_id(agents[i % agents.len()]);
            let now_s = epoch(SystemTime::now()).floor() as i64;
            // The i-th raise lapses when it crosses a multiple of `lapse_every`.
            let lapsing = (i as f64 / lapse_every).floor() < ((i + 1) as f64 / lapse_every).floor();
            let (id, shipment, due) = if lapsing {
                let due = now_s + lead;
                (lapsing_id('s', i, due), format!("s-{i}"), due)
            } else {
                (format!("f{i}"), format!("f-{i}"), now_s + 86_400)
            };
            let body = push_body(&format!("task-s-{i}"), &[(id.clone(), shipment)], due);
            let until = if lapsing {
                Instant::now() + Duration::from_secs(u64::try_from(lead - 2).unwrap_or(0))
            } else {
                window_end
            };
            let Ok(permit) = raise_sem.clone().try_acquire_owned() else {
                // The API has `in_flight` raises unanswered: this one is not sent.
                raises.offered.fetch_add(1, Ordering::Relaxed);
                raises.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let (http, api, due_set, stream, sat) = (
                http.clone(),
                api.to_owned(),
                due_set.clone(),
                raises.clone(),
                satisfiable.clone(),
            );
            stream.offered.fetch_add(1, Ordering::Relaxed);
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                if push(&http, &api, &agent, &body, &stream, until, lapsing).await {
                    if lapsing {
                        due_set
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(id, ('s', due));
                    } else {
                        sat.lock().unwrap_or_else(PoisonError::into_inner).insert(i);
                    }
                }
            }));
            continue;
        }
        if next_fact < total && fact_at <= t {
            let j = next_fact;
            next_fact += 1;
            let tenant = agents[j % agents.len()] % o.tenants;
            // The fact about raise j when it was accepted and is to be met; else a fact about a
            // shipment nothing expects (the same request, satisfying nothing).
            let shipment = if satisfiable
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&j)
            {
                format!("f-{j}")
            } else {
                format!("n-{j}")
            };
            let body = fact_body(&shipment, epoch(SystemTime::now()).floor() as i64);
            let Ok(permit) = fact_sem.clone().try_acquire_owned() else {
                facts.offered.fetch_add(1, Ordering::Relaxed);
                facts.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let (http, url, stream) = (http.clone(), format!("{api}/v1/facts"), facts.clone());
            stream.offered.fetch_add(1, Ordering::Relaxed);
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let token = format!("Bearer src-goal-t{tenant}");
                send(
                    &http,
                    &url,
                    ("Authorization", &token),
                    &body,
                    &stream,
                    window_end,
                    false,
                )
                .await;
            }));
            continue;
        }
        let next = raise_at.min(fact_at);
        let wait = (next - start.elapsed().as_secs_f64()).clamp(0.0, 0.05);
        tokio::time::sleep(Duration::from_secs_f64(wait.max(0.0005))).await;
        tasks.retain(|t| !t.is_finished());
    }
    for t in tasks {
        let _ = t.await;
    }
}
