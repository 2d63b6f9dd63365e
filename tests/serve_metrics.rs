//! `GET /metrics` of `serve` after a small scenario: the counters hold exactly what happened
//! (issue 14, "Metrics and traces").

use crate::common;

use std::time::Duration;

use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

/// The booking artifact with every id, the subject and the task renamed by `tag`.
fn renamed(artifact: &Value, tag: &str) -> Value {
    let text = artifact
        .to_string()
        .replace("exp-01J8Q0", &format!("exp-{tag}-"))
        .replace(SHIPMENT, &format!("PA-{tag}"))
        .replace("task-booking-7f3a", &format!("task-{tag}"));
    serde_json::from_str(&text).unwrap()
}

/// The value of the sample `name` (with its labels, as printed) in the exposition.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}

async fn scrape(w: &Watcher) -> String {
    let res = w.http().get(w.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let ctype = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    res.text().await.unwrap()
}

#[tokio::test]
async fn counters_after_the_worked_example() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;

    // Before anything: every counter at zero, every label present.
    let text = scrape(&w).await;
    assert_eq!(sample(&text, "a2a_watcher_expectations_raised_total"), 0.0);
    assert_eq!(
        sample(&text, "a2a_watcher_lapses_total{kind=\"stalled\"}"),
        0.0
    );
    assert_eq!(sample(&text, "a2a_watcher_open_expectations"), 0.0);

    // Three expectations a day away: open, counted from the per-agent counter.
    let far = renamed(&booking_artifact(BookingTimes::far()), "far");
    assert_eq!(w.push(&far).await.status, 200);
    let text = scrape(&w).await;
    assert_eq!(sample(&text, "a2a_watcher_expectations_raised_total"), 3.0);
    assert_eq!(sample(&text, "a2a_watcher_open_expectations"), 3.0);

    // One refused: a kind the card does not declare.
    let mut bad = renamed(&booking_artifact(BookingTimes::far()), "bad");
    let exps = &mut bad["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"];
    let mut one = exps[0].clone();
    one["kind"] = json!("shipment.customs");
    *exps = json!([one]);
    let answer = w.push(&bad).await;
    assert_eq!(
        answer.body["rejected"].as_array().unwrap().len(),
        1,
        "{answer:?}"
    );

    // The worked example on compressed times: four lapse tasks, one matched fact.
    let observed = run_worked_example(&w, &agent, PATIENCE).await;
    // And one fact nothing waits for.
    let unmatched =
        json!({ "factKey": "shipment.departed:PA-NOBODY", "observedAt": fmt(observed) });
    assert_eq!(w.report(&unmatched).await.status, 200);
    wait_for_requests(&agent, 4, PATIENCE).await;
    // The submitter records its outcome just after the agent answers.
    let delivered = "a2a_watcher_delivery_attempts_total{outcome=\"delivered\"}";
    assert!(
        wait_until(
            || async { sample(&scrape(&w).await, delivered) == 4.0 },
            PATIENCE
        )
        .await
    );

    let text = scrape(&w).await;
    let expect = [
        ("a2a_watcher_expectations_raised_total", 6.0),
        ("a2a_watcher_expectations_refused_total", 1.0),
        ("a2a_watcher_facts_total{result=\"matched\"}", 1.0),
        ("a2a_watcher_facts_total{result=\"unmatched\"}", 1.0),
        ("a2a_watcher_lapses_total{kind=\"overdue\"}", 2.0),
        ("a2a_watcher_lapses_total{kind=\"skipped\"}", 1.0),
        ("a2a_watcher_lapses_total{kind=\"stalled\"}", 1.0),
        (delivered, 4.0),
        (
            "a2a_watcher_delivery_attempts_total{outcome=\"failed\"}",
            0.0,
        ),
        ("a2a_watcher_delivery_failures_total", 0.0),
        ("a2a_watcher_timer_failures_total", 0.0),
        ("a2a_watcher_lapse_delivery_lateness_seconds_count", 4.0),
    ];
    for (name, value) in expect {
        assert_eq!(sample(&text, name), value, "{name} in\n{text}");
    }
    // Delivered within seconds of each lapse: all four in the 15 s bucket.
    assert_eq!(
        sample(
            &text,
            "a2a_watcher_lapse_delivery_lateness_seconds_bucket{le=\"15.0\"}"
        ),
        4.0
    );
    // The far three are still open; the departure of the example was satisfied.
    assert!(sample(&text, "a2a_watcher_open_expectations") >= 3.0);
}
