//! The bench's inputs: the artifacts it pushes, the facts it reports, and the HTTP calls that send
//! them.

use super::*;

/// A booking in the worked example's shape (examples/booking-artifact.json): manifest, the
/// departure after it, the arrival anchored on the departure; subject `shipment/B-{key}`.
pub(crate) fn booking(key: &str, due: jiff::Timestamp) -> Value {
    let at = |d: jiff::SignedDuration| (due + d).to_string();
    let h = jiff::SignedDuration::from_hours;
    json!({ "artifactUpdate": {
        "taskId": format!("task-{key}"), "contextId": format!("ctx-{key}"),
        "artifact": {
            "artifactId": format!("booking-{key}"),
            "parts": [{ "text": "Booked on EK203" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": [
                {
                    "expectationId": format!("exp-{key}-manifest"), "kind": "shipment.manifest",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "the airline manifest",
                    "satisfiedBy": { "factKey": format!("shipment.manifest.received:B-{key}") },
                    "dueAt": at(h(0)), "grace": "PT2H", "basis": "observed"
                },
                {
                    "expectationId": format!("exp-{key}-departure"), "kind": "shipment.departure",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "a departure event",
                    "satisfiedBy": { "factKey": format!("shipment.departed:B-{key}") },
                    "dueAt": at(h(7)), "grace": "PT6H", "basis": "observed",
                    "after": [format!("exp-{key}-manifest")]
                },
                {
                    "expectationId": format!("exp-{key}-arrival"), "kind": "shipment.arrival",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "an arrival event",
                    "satisfiedBy": { "factKey": format!("shipment.arrived:B-{key}") },
                    "dueAt": at(h(9)), "grace": "PT6H", "basis": "observed",
                    "anchor": { "expectationId": format!("exp-{key}-departure"), "offset": "PT1H45M" },
                    "after": [format!("exp-{key}-departure")],
                    "horizon": at(h(57))
                }
            ] } }
        }
    } })
}

/// Bookings due a month from now, one second apart, so the deadline index is spread out.
pub(crate) fn far_due(i: usize) -> jiff::Timestamp {
    let now = jiff::Timestamp::now().as_second();
    let base = now - now % 86_400 + 30 * 86_400;
    jiff::Timestamp::from_second(base + i as i64 % 10_000_000).unwrap_or(jiff::Timestamp::MAX)
}

/// The manifest fact of booking `B-{i}` (one of the preloaded bookings when `i` is below their
/// count).
pub(crate) fn manifest_fact(i: usize) -> Value {
    json!({
        "factKey": format!("shipment.manifest.received:B-{i}"),
        "observedAt": jiff::Timestamp::now().to_string(),
        "subject": { "type": "shipment", "id": format!("B-{i}") },
    })
}

pub(crate) fn push_input(
    w: &Watcher<SqliteStore>,
    tenant: &Tenant,
    agent: &AgentId,
    body: Value,
) -> anyhow::Result<Input> {
    let event = a2a_types::StreamResponse::from_push_body(body)?;
    let profile = w
        .directory
        .get(tenant, agent)
        .context("the booking agent is registered")?
        .profile;
    let items = watcher_core::ingest::push_items(&event, agent, SystemClock.now());
    Ok(Input::Push {
        agent: profile,
        items,
    })
}

pub(crate) async fn ok(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        bail!("the watcher answered {status}: {body}");
    }
    // Read the body, as a client would.
    resp.bytes().await?;
    Ok(())
}

/// A push of `LAPSES_PER_PUSH` manifest expectations due at `due`, each on its own subject
/// `shipment/{key}-{j}`, raised by task `task-{key}` (the lapse-latency and slow-agent phases).
pub(crate) fn manifests_push(key: &str, due: jiff::Timestamp) -> Value {
    let exps: Vec<Value> = (0..LAPSES_PER_PUSH)
        .map(|j| {
            let s = format!("{key}-{j}");
            json!({
                "expectationId": format!("exp-{s}"), "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": s },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{s}") },
                "dueAt": due.to_string(), "basis": "observed"
            })
        })
        .collect();
    json!({ "artifactUpdate": {
        "taskId": format!("task-{key}"), "contextId": format!("ctx-{key}"),
        "artifact": {
            "artifactId": format!("booking-{key}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": exps } }
        }
    } })
}

pub(crate) async fn post_push(
    http: &reqwest::Client,
    base: &str,
    body: &Value,
) -> anyhow::Result<()> {
    post_push_as(http, base, "booking", PUSH_TOKEN, body).await
}

/// `body` pushed by `agent` with its push `token`; an error unless the watcher answers 2xx.
pub(crate) async fn post_push_as(
    http: &reqwest::Client,
    base: &str,
    agent: &str,
    token: &str,
    body: &Value,
) -> anyhow::Result<()> {
    ok(http
        .post(format!("{base}/v1/agents/{agent}/push"))
        .header("X-A2A-Notification-Token", token)
        .json(body)
        .send()
        .await?)
    .await
}
