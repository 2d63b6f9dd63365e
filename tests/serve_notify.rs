//! Notification channels in `serve` (issue 25; expectations-v1 §13.1): a lapse is told to a real
//! local receiver, signed, once, through a kill -9 and a restart; `/metrics` counts it; and
//! `a2a-watcher notify test` sends a sample through the same channel.

use crate::common;

use std::process::Command;
use std::time::Duration;

use jiff::Timestamp;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};
use watcher_notify::testing::{Receiver, SECRET};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);

fn channel(receiver: &Receiver) -> String {
    format!(
        "public_url = \"http://watcher.test\"\n\n[[notify]]\nid = \"ops\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
        receiver.url
    )
}

#[tokio::test]
async fn a_lapse_is_told_once_signed_through_a_kill_and_restart() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, &channel(&receiver)).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-n1", "exp-n1", "PA-N1", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);

    assert!(
        wait_until(|| async { !receiver.accepted().is_empty() }, PATIENCE).await,
        "no notification within {PATIENCE:?}:\n{}",
        w.log()
    );
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    let n = &got[0];
    assert!(
        n.verified,
        "the notification is signed with the channel's secret"
    );
    assert_eq!(n.body["type"], "lapse.recorded");
    let data = &n.body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["lapse"], "overdue");
    assert_eq!(
        data["messageId"],
        format!("lapse:exp-n1:overdue:{}", fmt(due))
    );
    assert_eq!(data["block"]["expectationId"], "exp-n1");
    assert_eq!(data["block"]["subject"]["id"], "PA-N1");
    assert_eq!(
        data["links"]["operator"],
        "http://watcher.test/ui/subjects/shipment/PA%2DN1"
    );
    let counted = "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"delivered\"} 1\n";
    let scrape = || async {
        let res = w.http().get(w.url("/metrics")).send().await.unwrap();
        res.text().await.unwrap()
    };
    assert!(
        wait_until(|| async { scrape().await.contains(counted) }, PATIENCE).await,
        "{}",
        scrape().await
    );

    // kill -9 and a restart: the channel's cursor is in the database; nothing is told again.
    w.restart().await;
    assert!(
        holds_for(
            || async { receiver.seen().len() == 1 },
            Duration::from_secs(3)
        )
        .await,
        "told again after the restart: {:?}",
        receiver.seen()
    );
}

#[tokio::test]
async fn notify_test_sends_a_signed_sample_and_fails_on_a_refusal() {
    let receiver = Receiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &channel(&receiver)).await;
    let config = w.dir.path().join("watcher.toml");
    let run = move || {
        Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .args(["notify", "test", "--channel", "ops", "--config"])
            .arg(&config)
            .output()
            .expect("run a2a-watcher notify test")
    };
    let out = tokio::task::spawn_blocking(run.clone()).await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    let seen = receiver.seen();
    let sample = seen
        .iter()
        .find(|r| r.body["type"] == "notify.test")
        .expect("the sample arrived");
    assert!(sample.verified);
    assert_eq!(sample.body["data"]["channel"], "ops");
    assert_eq!(printed.trim(), format!("sent {} to channel ops", sample.id));

    receiver.answer(500);
    let out = tokio::task::spawn_blocking(run).await.unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "a2a-watcher notify test: channel \"ops\": HTTP 500 from the receiver"
    );
}
