//! `a2a-watcher example-artifact --from now` and `example-fact --at now`: the README's
//! walkthrough bodies on today's clock. Posted to `serve`, the artifact raises the three
//! expectations with nothing lapsed, and the departure reported before the manifest's due time
//! skips the manifest at once and re-anchors the arrival 40 s after the departure
//! (expectations-v1 §9.2, §10.2).

use std::process::Command;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::common::{self, expectation, spawn_watcher, wait_for_requests};

/// `a2a-watcher ARGS` from the repository's root; answers its standard output as JSON.
fn printed(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("run a2a-watcher");
    assert!(out.status.success(), "{args:?}: {out:?}");
    serde_json::from_slice(&out.stdout).expect("the command prints JSON")
}

#[test]
fn the_printed_artifact_is_valid_for_the_example_card() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("booking.json");
    let artifact = printed(&["example-artifact", "--from", "now"]);
    std::fs::write(&path, artifact.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["validate", "artifact"])
        .arg(&path)
        .args(["--card", "examples/booking-card.json"])
        .output()
        .expect("run a2a-watcher");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("a valid artifact"), "{said}");
}

#[test]
fn without_from_the_artifact_is_the_worked_examples_file() {
    let kept: Value =
        serde_json::from_str(include_str!("../examples/booking-artifact.json")).unwrap();
    assert_eq!(printed(&["example-artifact"]), kept);
}

#[tokio::test]
async fn the_walkthrough_bodies_tell_the_story_from_now() {
    let agent = watcher_delivery::testing::spawn_capture_agent(
        watcher_delivery::testing::Behaviour::accept(),
    )
    .await;
    let w = spawn_watcher(&agent, "").await;

    let pushed = w
        .push(&printed(&["example-artifact", "--from", "now"]))
        .await;
    assert_eq!(pushed.status, 200, "{pushed:?}");
    assert_eq!(pushed.body["raised"].as_array().map(Vec::len), Some(3));
    let record = w.shipment(common::SHIPMENT).await.expect("the shipment");
    for id in ["exp-01J8Q0MANIFEST", "exp-01J8Q0DEPART", "exp-01J8Q0ARRIVE"] {
        let e = expectation(&record, id);
        assert_eq!(e["status"], "open", "{e}");
        assert_eq!(e["lapses"].as_array().map(Vec::len), Some(0), "{e}");
    }

    let fact = printed(&["example-fact", "--at", "now"]);
    let observed: Timestamp = fact["observedAt"].as_str().unwrap().parse().unwrap();
    let reported = w.report(&fact).await;
    assert_eq!(reported.status, 200, "{reported:?}");

    // The manifest, named in the departure's `after` and still open, is skipped at once.
    wait_for_requests(&agent, 1, Duration::from_secs(10)).await;
    let lapse = common::lapse_block(&agent.requests()[0]);
    assert_eq!(lapse["lapse"], "skipped", "{lapse}");
    assert_eq!(lapse["expectationId"], "exp-01J8Q0MANIFEST", "{lapse}");
    let record = w.shipment(common::SHIPMENT).await.expect("the shipment");
    assert_eq!(
        expectation(&record, "exp-01J8Q0DEPART")["status"],
        "satisfied"
    );
    let arrival = expectation(&record, "exp-01J8Q0ARRIVE");
    assert_eq!(
        arrival["dueAt"].as_str().unwrap(),
        (observed + SignedDuration::from_secs(40)).to_string()
    );
}

/// The README's "Run it" a second time on the same database: the walkthrough's artifact, from a
/// later instant, carries the same expectationIds with other due times, so every expectation
/// is refused (an expectationId is never reused, expectations-v1 §8). The answer says so in
/// `summary` beside each refusal's reason, and serve logs one warning naming the ids and why.
#[tokio::test]
async fn the_walkthrough_run_again_on_the_same_database_says_why_nothing_is_raised() {
    let agent = watcher_delivery::testing::spawn_capture_agent(
        watcher_delivery::testing::Behaviour::accept(),
    )
    .await;
    let mut w = spawn_watcher(&agent, "").await;
    let first_run = Timestamp::now();
    let pushed = w
        .push(&printed(&[
            "example-artifact",
            "--from",
            &first_run.to_string(),
        ]))
        .await;
    assert_eq!(
        pushed.body["raised"].as_array().map(Vec::len),
        Some(3),
        "{pushed:?}"
    );

    // The second run: serve started again on its database, the artifact from a minute later.
    w.restart().await;
    let second_run = first_run + SignedDuration::from_secs(60);
    let again = w
        .push(&printed(&[
            "example-artifact",
            "--from",
            &second_run.to_string(),
        ]))
        .await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body["raised"], serde_json::json!([]), "{again:?}");
    let ids = ["exp-01J8Q0MANIFEST", "exp-01J8Q0DEPART", "exp-01J8Q0ARRIVE"];
    let refused: Vec<&str> = again.body["rejected"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|e| e["expectationId"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(refused, ids, "{again:?}");
    let summary = again.body["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("nothing was raised: all 3 expectations this push carried were refused: their expectationIds were already recorded for this agent"),
        "{summary}"
    );
    let warned = common::wait_until(
        || async {
            w.log().lines().any(|l| {
                l.contains("WARN")
                    && l.contains(
                        "push refused 3 expectation(s) whose expectationId was already recorded",
                    )
                    && ids.iter().all(|id| l.contains(id))
            })
        },
        Duration::from_secs(5),
    )
    .await;
    assert!(warned, "no warning in serve's log:\n{}", w.log());
}
