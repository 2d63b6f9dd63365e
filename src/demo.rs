//! `a2a-watcher demo`: the worked example (expectations-v1 Appendix B) live, on a compressed
//! clock, in about twenty seconds. Starts the example agent and a real `serve` (temporary
//! SQLite file, real HTTP), pushes the booking artifact, reports the departure fact, and shows
//! the lapse tasks arriving at the agent and the subject's record.

use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::Value;

use watcher_config::config::{AgentConfig, Config, PartyConfig, SourceConfig};

const PUSH_TOKEN: &str = "demo-push-token";
const SOURCE_TOKEN: &str = "demo-source-token";
const OPERATOR_TOKEN: &str = "demo-operator-token";

/// Runs the demo; prints as it goes.
///
/// # Errors
/// When a component fails to start or the lapse tasks do not all arrive within a minute.
pub async fn run() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("a2a-watcher-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).context("Failed to create a temporary folder")?;
    let card_path = dir.join("booking-card.json");
    let mut agent =
        crate::example_agent::start("127.0.0.1:0", crate::example_agent::BOOKING_CARD, false)
            .await?;
    // The card the agent serves (it says `pushNotifications: false`), not the file it came from.
    std::fs::write(&card_path, agent.card.to_string()).context("Failed to write the card")?;
    println!("example agent listening on {}", agent.url);

    let mut config = Config::defaults();
    config.listen = "127.0.0.1:0".into();
    config.database = dir.join("watcher.db");
    config.agents.push(AgentConfig {
        id: "booking".into(),
        card: card_path.to_string_lossy().into_owned(),
        endpoint: Some(agent.url.clone()),
        push_token: PUSH_TOKEN.into(),
        bearer: None,
        tenant: "default".into(),
        submit_lapses: false,
        // The example agent answers SendMessage only: no GetTask to reconcile with.
        reconcile: false,
        probe: false,
        learnables: Vec::new(),
        resolve_on: None,
    });
    config.sources.push(SourceConfig {
        id: "carrier-feed:emirates".into(),
        token: SOURCE_TOKEN.into(),
        tenant: "default".into(),
        signature: None,
        mappings: Vec::new(),
    });
    config.operators.push(PartyConfig {
        id: "ops-desk".into(),
        token: OPERATOR_TOKEN.into(),
        tenant: "default".into(),
    });
    let running = watcher_host::serve::start(config).await?;
    let base_url = format!("http://{}", running.addr);
    println!(
        "watcher listening on {base_url} (database {})",
        dir.join("watcher.db").display()
    );
    let http = reqwest::Client::new();

    // Whole seconds, so the instants printed below are easy to read.
    let t0 = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + 1)
        .ok()
        .and_then(watcher_core::time::Instant::from_timestamp)
        .context("the clock is out of range")?;
    let pushed: Value = http
        .post(format!("{base_url}/v1/agents/booking/push"))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&crate::example::booking_artifact(
            t0,
            jiff::SignedDuration::from_secs(1),
        ))
        .send()
        .await?
        .json()
        .await?;
    println!(
        "\nagent -> watcher: booking artifact raised {}",
        pushed["raised"]
    );
    println!("           manifest due +2s (grace 2s), departure due +8s, arrival +2s after departure (grace 3s), horizon +14s\n");

    tokio::time::sleep(Duration::from_secs(5)).await;
    // The departure, observed at +4 s (reported a moment later; an observation may not postdate
    // its receipt): the arrival re-anchors to +6 s (+3 s grace), and the
    // manifest, named in the departure's `after` and still open, lapses `skipped` at once.
    let observed = t0
        .checked_add(jiff::SignedDuration::from_secs(4))
        .context("the clock is out of range")?;
    let fact = crate::example::departure_fact(observed, Some("carrier-feed:emirates"));
    let reported: Value = http
        .post(format!("{base_url}/v1/facts"))
        .bearer_auth(SOURCE_TOKEN)
        .json(&fact)
        .send()
        .await?
        .json()
        .await?;
    println!(
        "carrier -> watcher: departed; satisfied {}\n",
        reported["results"][0]["satisfied"]
    );

    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    let mut kinds = Vec::new();
    while kinds.len() < 4 {
        let Ok(Some(params)) = tokio::time::timeout_at(deadline, agent.received.recv()).await
        else {
            bail!(
                "only {} of the 4 lapse tasks arrived within the time allowed: {kinds:?}",
                kinds.len()
            );
        };
        kinds.push(
            params["message"]["metadata"][watcher_core::EXPECTATIONS_URI]["lapse"]["lapse"]
                .as_str()
                .unwrap_or("?")
                .to_owned(),
        );
    }
    println!("\nthe agent received 4 lapse tasks: {}", kinds.join(", "));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let record: Value = http
        .get(format!("{base_url}/v1/subjects/shipment/PA-2026-0901"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await?
        .json()
        .await?;
    println!("\nthe subject's record (GET /v1/subjects/shipment/PA-2026-0901):");
    for e in record["expectations"].as_array().into_iter().flatten() {
        let lapses: Vec<&str> = e["lapses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|l| l["lapse"].as_str())
            .collect();
        println!(
            "  {:<20} {:<9} projected {}  current {}  lapses [{}]",
            e["expectationId"].as_str().unwrap_or(""),
            e["status"].as_str().unwrap_or(""),
            e["projectedDueAt"].as_str().unwrap_or(""),
            e["dueAt"].as_str().unwrap_or(""),
            lapses.join(", ")
        );
    }
    let lapses: Value = http
        .get(format!("{base_url}/v1/lapses"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await?
        .json()
        .await?;
    println!("\ndelivery (GET /v1/lapses):");
    for l in lapses["lapses"].as_array().into_iter().flatten() {
        println!(
            "  {:<60} {}",
            l["messageId"].as_str().unwrap_or(""),
            l["delivery"].as_str().unwrap_or("")
        );
    }
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
