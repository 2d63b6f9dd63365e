//! `a2a-watcher retry`: re-queues failed lapse tasks of one agent through a running watcher's
//! `POST /v1/lapses/retry` (the same route on `serve` and on AWS), with an operator's token.

use anyhow::{bail, Context};
use serde_json::{json, Value};

/// Posts `{"agent", "messageIds"?}` to `{url}/v1/lapses/retry` with `token`, prints the answer,
/// and fails with the problem's `detail` when the watcher refuses.
///
/// # Errors
/// The watcher cannot be reached, or answers an error.
pub async fn run(
    url: &str,
    token: &str,
    agent: &str,
    message_ids: &[String],
) -> anyhow::Result<()> {
    let mut body = json!({ "agent": agent });
    if !message_ids.is_empty() {
        body["messageIds"] = json!(message_ids);
    }
    let endpoint = format!("{}/v1/lapses/retry", url.trim_end_matches('/'));
    let response = reqwest::Client::new()
        .post(&endpoint)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("Failed to reach {endpoint}"))?;
    let status = response.status();
    let answer: Value = response
        .json()
        .await
        .with_context(|| format!("{endpoint} answered {status} without JSON"))?;
    if !status.is_success() {
        bail!(
            "{endpoint} answered {status}: {}",
            answer["detail"].as_str().unwrap_or("(no detail)")
        );
    }
    println!(
        "re-queued {} failed lapse task(s) of agent {agent}",
        answer["requeued"]
    );
    for skipped in answer["skipped"].as_array().into_iter().flatten() {
        println!(
            "  not re-queued: {} ({})",
            skipped["messageId"].as_str().unwrap_or("?"),
            skipped["reason"].as_str().unwrap_or("?")
        );
    }
    if answer["more"] == true {
        println!("  more failed lapse tasks remain; run it again");
    }
    Ok(())
}
