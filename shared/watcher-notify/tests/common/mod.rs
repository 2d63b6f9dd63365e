//! Lapse tasks to tell; the receiver is `watcher_notify::testing`.

pub use watcher_notify::testing::{Receiver, SECRET};

use serde_json::json;
use watcher_config::config::NotifyConfig;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_runtime::store::OutboxEntry;

/// `2026-09-11T00:00:00Z` plus `secs`.
pub fn at(secs: i64) -> Instant {
    Instant::parse("2026-09-11T00:00:00Z")
        .unwrap()
        .checked_add(jiff::SignedDuration::from_secs(secs))
        .unwrap()
}

/// The lapse task of expectation `exp` of `agent`, lapsed `kind` at `lapsed_at`, about shipment
/// `subject`, with the lapse block the engine writes (expectations-v1 §10.1).
pub fn lapse_task(
    agent: &str,
    exp: &str,
    kind: LapseKind,
    subject: &str,
    lapsed_at: Instant,
) -> OutboxEntry {
    let lapse = match kind {
        LapseKind::Overdue => "overdue",
        LapseKind::Skipped => "skipped",
        LapseKind::Stalled => "stalled",
    };
    let message_id = format!("lapse:{exp}:{lapse}:{lapsed_at}");
    let block = json!({
        "expectationId": exp,
        "kind": "shipment.delivered",
        "subject": { "type": "shipment", "id": subject },
        "expects": format!("delivery of {subject}"),
        "lapse": lapse,
        "projectedDueAt": lapsed_at.to_string(),
        "dueAt": lapsed_at.to_string(),
        "lapsedAt": lapsed_at.to_string(),
        "lineage": 0,
    });
    OutboxEntry::queued(
        Tenant::parse("default".to_owned()).unwrap(),
        AgentId::parse(agent.to_owned()).unwrap(),
        message_id.clone(),
        ExpectationId::parse(exp.to_owned()).unwrap(),
        kind,
        lapsed_at,
        json!({ "message": {
            "messageId": message_id,
            "parts": [{ "text": format!("Delivery of {subject} is {lapse}.") }],
            "metadata": { EXPECTATIONS_URI: { "lapse": block } },
        }}),
    )
}

/// A Standard Webhooks channel `ops` of the default tenant posting to `url`, signed with
/// [`SECRET`], telling `events` (empty: all), with a 5 s timeout.
pub fn channel_config(url: &str, events: &[&str]) -> NotifyConfig {
    NotifyConfig {
        id: "ops".into(),
        tenant: "default".into(),
        url: url.into(),
        secret: Some(SECRET.into()),
        format: "standard-webhooks".into(),
        agents: Vec::new(),
        kinds: Vec::new(),
        expectation_kinds: Vec::new(),
        events: events.iter().map(ToString::to_string).collect(),
        digest: None,
        grace: None,
        timeout_secs: 5,
        from: None,
        to: Vec::new(),
        tls: "starttls".into(),
        username: None,
        password: None,
        routing_key: None,
        api_key: None,
        severity: Default::default(),
        min_severity: None,
        priority: Default::default(),
        horizon: None,
        redact: Vec::new(),
        redact_key: None,
    }
}

/// Commits `entries` to `store` as the engine queues lapse tasks (the default tenant).
pub async fn record(store: &watcher_runtime::memory::MemoryStore, entries: Vec<OutboxEntry>) {
    use watcher_runtime::store::{Commit, Records as _};
    store
        .commit(
            &Tenant::parse("default".to_owned()).unwrap(),
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .expect("commit the lapse tasks");
}
